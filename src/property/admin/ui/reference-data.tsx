import { FieldGuesser, ListGuesser, ShowGuesser } from '@api-platform/admin';
import { NumberField, type NumberFieldProps } from 'react-admin';
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

export function BundeslandList() {
  return (
    <ListGuesser>
      <FieldGuesser source="name" />
      <FieldGuesser source="code" />
      <PercentField source="grunderwerbsteuerSatz" label="Grunderwerbsteuersatz" />
    </ListGuesser>
  );
}

export function BundeslandShow() {
  return (
    <ShowGuesser>
      <FieldGuesser source="name" />
      <FieldGuesser source="code" />
      <PercentField source="grunderwerbsteuerSatz" label="Grunderwerbsteuersatz" />
    </ShowGuesser>
  );
}

export function UserList() {
  return (
    <ListGuesser>
      <FieldGuesser source="name" />
      <FieldGuesser source="email" />
      <FieldGuesser source="role" />
    </ListGuesser>
  );
}

export function UserShow() {
  return (
    <ShowGuesser>
      <FieldGuesser source="name" />
      <FieldGuesser source="email" />
      <FieldGuesser source="role" />
    </ShowGuesser>
  );
}
