import { NumberField, type NumberFieldProps } from 'react-admin';

/** Amounts in euros, written the German way: 1.234.567,89 €. */
export const EUR_FORMAT = { style: 'currency', currency: 'EUR' } as const;
export const LOCALE = 'de-DE';

export function EuroField(props: NumberFieldProps) {
  return <NumberField locales={LOCALE} options={EUR_FORMAT} emptyText="–" {...props} />;
}

/** Areas in square metres: 92,5 m². */
export function AreaField(props: NumberFieldProps) {
  return <NumberField locales={LOCALE} options={{ maximumFractionDigits: 2 }} emptyText="–" {...props} />;
}
