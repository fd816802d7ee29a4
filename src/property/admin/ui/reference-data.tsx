import { FieldGuesser, ShowGuesser } from '@api-platform/admin';
import { NumberField, type NumberFieldProps } from 'react-admin';
import { LiveListGuesser } from './live-updates.js';
import { LOCALE } from './money.js';

/**
 * Federal states and users in the admin: the guessers, less what would mislead. A state's
 * transfer-tax rate is a percentage (`6,5 %`); a user's `apiKey` is shown once, in the answer that
 * creates the account, so a column or field for it would always be empty.
 */

/** A rate in percent as the API gives it: 6.5 is shown `6,5 %`. */
export function PercentField(props: NumberFieldProps) {
  return (
    <NumberField
      locales={LOCALE}
      options={{ style: 'unit', unit: 'percent', maximumFractionDigits: 4 }}
      emptyText="–"
      {...props}
    />
  );
}

/** What the list and the page of a federal state show. */
const stateFields = [
  <FieldGuesser key="name" source="name" />,
  <FieldGuesser key="code" source="code" />,
  <PercentField key="rate" source="grunderwerbsteuerSatz" label="Grunderwerbsteuersatz" />,
];

/** What the list and the page of a user show: no `apiKey`. */
const userFields = [
  <FieldGuesser key="name" source="name" />,
  <FieldGuesser key="email" source="email" />,
  <FieldGuesser key="role" source="role" />,
];

export const BundeslandList = () => <LiveListGuesser>{stateFields}</LiveListGuesser>;
export const BundeslandShow = () => <ShowGuesser>{stateFields}</ShowGuesser>;
export const UserList = () => <LiveListGuesser>{userFields}</LiveListGuesser>;
export const UserShow = () => <ShowGuesser>{userFields}</ShowGuesser>;
