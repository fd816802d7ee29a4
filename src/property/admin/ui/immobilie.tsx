import { CreateGuesser, EditGuesser, FieldGuesser, InputGuesser, ListGuesser, ShowGuesser } from '@api-platform/admin';
import { InputAdornment, Table, TableBody, TableCell, TableRow, Typography } from '@mui/material';
import { DateField, NumberField, NumberInput, useRecordContext } from 'react-admin';
import { LiveUpdates } from './live-updates.js';
import { AreaField, EuroField, LOCALE } from './money.js';

/**
 * Immobilie in the admin: the guessers for what they do well (filters, references, enums,
 * validation from the Hydra docs), with money in euros (de-DE) and the computed purchase costs
 * (`preisProQuadratmeter`, `grunderwerbsteuer`, `kaufnebenkosten`, `gesamtkosten`; read-only,
 * absent when their inputs are) on the detail page.
 */

const euro = { endAdornment: <InputAdornment position="end">€</InputAdornment> };
const squareMetres = { endAdornment: <InputAdornment position="end">m²</InputAdornment> };

export function ImmobilieList() {
  return (
    <>
      <LiveUpdates />
      <ListGuesser>
        <FieldGuesser source="adresse" />
        <FieldGuesser source="typ" />
        <FieldGuesser source="bundesland" />
        <AreaField source="wohnflaeche" label="Wohnfläche (m²)" />
        <FieldGuesser source="zimmer" />
        <EuroField source="kaufpreis" label="Kaufpreis" />
        <EuroField source="preisProQuadratmeter" label="Preis pro m²" />
      </ListGuesser>
    </>
  );
}

export function ImmobilieShow() {
  return (
    <>
      <LiveUpdates />
      <ShowGuesser>
        <FieldGuesser source="adresse" />
        <FieldGuesser source="typ" />
        <FieldGuesser source="bundesland" />
        <FieldGuesser source="heizungstyp" />
        <FieldGuesser source="verwalter" />
        <AreaField source="wohnflaeche" label="Wohnfläche (m²)" />
        <AreaField source="nutzflaeche" label="Nutzfläche (m²)" />
        <FieldGuesser source="zimmer" />
        <EuroField source="kaufpreis" label="Kaufpreis" />
        <EuroField source="preisProQuadratmeter" label="Preis pro m²" />
        <EuroField source="grunderwerbsteuer" label="Grunderwerbsteuer" />
        <KaufnebenkostenField label="Kaufnebenkosten" />
        <EuroField source="gesamtkosten" label="Gesamtkosten" sx={{ fontWeight: 'bold' }} />
        <EuroField source="kaltmiete" label="Kaltmiete (Monat)" />
        <NumberField source="bruttomietrendite" label="Bruttomietrendite (%)" locales={LOCALE} emptyText="–" />
        <NumberField source="kaufpreisfaktor" label="Kaufpreisfaktor" locales={LOCALE} emptyText="–" />
        <DateField source="createdAt" label="Angelegt" showTime locales={LOCALE} />
        <DateField source="updatedAt" label="Geändert" showTime locales={LOCALE} />
      </ShowGuesser>
    </>
  );
}

const COSTS = [
  ['grunderwerbsteuer', 'Grunderwerbsteuer'],
  ['notar', 'Notar'],
  ['grundbuch', 'Grundbuch'],
  ['makler', 'Makler'],
] as const;

/** The purchase-cost breakdown: one row per part the API gives (no broker without a broker rate), then the sum. */
function KaufnebenkostenField(_props: { label: string }) {
  const record = useRecordContext();
  const costs = record?.kaufnebenkosten as Record<string, unknown> | undefined;
  if (!costs || typeof costs !== 'object') return <Typography variant="body2">–</Typography>;
  const rows = COSTS.filter(([key]) => typeof costs[key] === 'number');
  return (
    <Table size="small" sx={{ width: 'auto' }} className="kaufnebenkosten">
      <TableBody>
        {rows.map(([key, label]) => (
          <TableRow key={key} data-cost={key}>
            <TableCell sx={{ pl: 0 }}>{label}</TableCell>
            <TableCell align="right">
              <EuroField source={`kaufnebenkosten.${key}`} />
            </TableCell>
          </TableRow>
        ))}
        <TableRow data-cost="summe">
          <TableCell sx={{ pl: 0, fontWeight: 'bold', borderBottom: 'none' }}>Summe</TableCell>
          <TableCell align="right" sx={{ borderBottom: 'none' }}>
            <EuroField source="kaufnebenkosten.summe" sx={{ fontWeight: 'bold' }} />
          </TableCell>
        </TableRow>
      </TableBody>
    </Table>
  );
}

/** The writable fields; the computed ones are the API's to fill in. */
function ImmobilieInputs() {
  return (
    <>
      <InputGuesser source="adresse" />
      <InputGuesser source="typ" />
      <InputGuesser source="bundesland" />
      <InputGuesser source="heizungstyp" />
      <InputGuesser source="wohnflaeche" label="Wohnfläche" InputProps={squareMetres} />
      <InputGuesser source="nutzflaeche" label="Nutzfläche" InputProps={squareMetres} />
      <InputGuesser source="zimmer" />
      <NumberInput source="kaufpreis" label="Kaufpreis" min={0} step={1000} InputProps={euro} />
      <NumberInput source="kaltmiete" label="Kaltmiete (Monat)" min={0} step={50} InputProps={euro} />
      <InputGuesser source="verwalter" />
    </>
  );
}

export function ImmobilieEdit() {
  return (
    <EditGuesser>
      <ImmobilieInputs />
    </EditGuesser>
  );
}

export function ImmobilieCreate() {
  return (
    <CreateGuesser>
      <ImmobilieInputs />
    </CreateGuesser>
  );
}
