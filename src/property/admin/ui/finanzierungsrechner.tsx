import {
  Alert,
  Box,
  Button,
  Card,
  CardContent,
  FormControlLabel,
  InputAdornment,
  MenuItem,
  Radio,
  RadioGroup,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableRow,
  TextField,
  Typography,
} from '@mui/material';
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { Title } from 'react-admin';
import { withApiKey } from './api-key.js';
import { EUR_FORMAT, LOCALE } from './money.js';

/**
 * The financing calculator in the admin (`#/finanzierungsrechners`): a form for the inputs of
 * `POST /api/finanzierungsrechners` (a property picked from the caller's list, or a typed price;
 * equity, rate, repayment or Wunschrate, Zinsbindung, Sondertilgung, Anschlusszins), then the
 * API's answer as figures, a chart (Restschuld, interest and repayment per year) and the yearly
 * table. Everything is computed by the API; the page only shows it. The chart is plain SVG (no
 * chart library, nothing from a CDN).
 */

interface Row {
  readonly jahr: number;
  readonly zinsen: number;
  readonly tilgung: number;
  readonly sondertilgung: number;
  readonly restschuld: number;
}

interface Summen {
  readonly zinsen: number;
  readonly tilgung: number;
  readonly sondertilgung: number;
  readonly zahlungen: number;
}

interface Ergebnis {
  readonly darlehensbetrag: number;
  readonly monatsrate: number;
  readonly anfaenglicheTilgung: number;
  readonly effektivzinsOhneGebuehren: number;
  readonly restschuldNachZinsbindung: number;
  readonly summenZinsbindung: Summen;
  readonly summenGesamt: Summen;
  readonly tilgungsplan: readonly Row[];
  readonly laufzeitMonate?: number;
  readonly zinsbindungJahre: number;
}

interface Violation {
  readonly propertyPath: string;
  readonly message: string;
}

interface Option {
  readonly iri: string;
  readonly adresse: string;
  readonly kaufpreis?: number;
}

const euro = new Intl.NumberFormat(LOCALE, EUR_FORMAT);
const percent = new Intl.NumberFormat(LOCALE, { maximumFractionDigits: 2 });
const compact = new Intl.NumberFormat(LOCALE, { notation: 'compact', maximumFractionDigits: 1 });
const eur = (value: number) => euro.format(value);

const FIELDS = {
  kaufpreis: 'Kaufpreis',
  eigenkapital: 'Eigenkapital',
  zinssatz: 'Sollzins',
  tilgungssatz: 'Anfängliche Tilgung',
  wunschrate: 'Wunschrate',
  zinsbindungJahre: 'Zinsbindung',
  sondertilgung: 'Sondertilgung pro Jahr',
  sondertilgungAbJahr: 'Sondertilgung ab Jahr',
  sondertilgungMaxProzent: 'Sondertilgung max. (% des Darlehens)',
  anschlusszins: 'Anschlusszins',
} as const;
type Field = keyof typeof FIELDS;

const UNITS: Record<Field, string> = {
  kaufpreis: '€',
  eigenkapital: '€',
  zinssatz: '% p. a.',
  tilgungssatz: '% p. a.',
  wunschrate: '€ / Monat',
  zinsbindungJahre: 'Jahre',
  sondertilgung: '€',
  sondertilgungAbJahr: '',
  sondertilgungMaxProzent: '%',
  anschlusszins: '% p. a.',
};

const INITIAL: Record<Field, string> = {
  kaufpreis: '',
  eigenkapital: '',
  zinssatz: '',
  tilgungssatz: '2',
  wunschrate: '',
  zinsbindungJahre: '10',
  sondertilgung: '',
  sondertilgungAbJahr: '1',
  sondertilgungMaxProzent: '',
  anschlusszins: '',
};

/** A decimal as people type it here: "1.234,5", "100.000", "1234.5" or "3,8". */
export function parseAmount(text: string): number | undefined {
  const trimmed = text.trim().replace(/\s|€|%/g, '');
  if (!trimmed) return undefined;
  // German first: a comma is the decimal mark and dots group thousands ("100.000" is 100,000).
  const normalized =
    trimmed.includes(',') || /^\d{1,3}(\.\d{3})+$/.test(trimmed)
      ? trimmed.replace(/\./g, '').replace(',', '.')
      : trimmed;
  const value = Number(normalized);
  return Number.isFinite(value) ? value : Number.NaN;
}

export function FinanzierungsrechnerPage({ entrypoint }: { entrypoint: string }) {
  const [values, setValues] = useState(INITIAL);
  const [mode, setMode] = useState<'tilgungssatz' | 'wunschrate'>('tilgungssatz');
  const [immobilie, setImmobilie] = useState('');
  const [options, setOptions] = useState<readonly Option[]>([]);
  const [result, setResult] = useState<Ergebnis | undefined>();
  const [violations, setViolations] = useState<readonly Violation[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    const url = `${entrypoint}/immobilies?itemsPerPage=100&order[adresse]=asc&properties[]=adresse&properties[]=kaufpreis`;
    fetch(url, { headers: withApiKey({ Accept: 'application/ld+json' }), signal: controller.signal })
      .then(async (response) => {
        if (!response.ok) return;
        const page = (await response.json()) as Record<string, unknown>;
        const members = (page['hydra:member'] ?? page.member ?? []) as Record<string, unknown>[];
        setOptions(
          members.map((m) => ({
            iri: m['@id'] as string,
            adresse: m.adresse as string,
            ...(typeof m.kaufpreis === 'number' ? { kaufpreis: m.kaufpreis } : {}),
          })),
        );
      })
      .catch(() => undefined); // the page works without the list: a price can be typed
    return () => controller.abort();
  }, [entrypoint]);

  const set = (field: Field) => (event: { target: { value: string } }) =>
    setValues((v) => ({ ...v, [field]: event.target.value }));

  const pick = (iri: string) => {
    setImmobilie(iri);
    const chosen = options.find((o) => o.iri === iri);
    if (chosen?.kaufpreis !== undefined) setValues((v) => ({ ...v, kaufpreis: String(chosen.kaufpreis) }));
  };

  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(undefined);
    const body: Record<string, unknown> = {};
    const local: Violation[] = [];
    for (const field of Object.keys(FIELDS) as Field[]) {
      if (field === (mode === 'tilgungssatz' ? 'wunschrate' : 'tilgungssatz')) continue;
      const value = parseAmount(values[field]);
      if (value === undefined) continue;
      if (Number.isNaN(value)) local.push({ propertyPath: field, message: 'Bitte eine Zahl eingeben.' });
      else body[field] = value;
    }
    if (immobilie && values.kaufpreis.trim() === '') body.immobilie = immobilie;
    setViolations(local);
    if (local.length) return;
    setBusy(true);
    try {
      const response = await fetch(`${entrypoint}/finanzierungsrechners`, {
        method: 'POST',
        headers: withApiKey({ Accept: 'application/ld+json', 'Content-Type': 'application/ld+json' }),
        body: JSON.stringify(body),
      });
      const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (response.ok) {
        setResult(answer as unknown as Ergebnis);
        setViolations([]);
      } else if (Array.isArray(answer.violations)) {
        setViolations(answer.violations as Violation[]);
        setResult(undefined);
      } else {
        setError(String(answer.detail ?? answer['hydra:description'] ?? `${response.status} ${response.statusText}`));
        setResult(undefined);
      }
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  const problem = (field: string) => violations.find((v) => v.propertyPath === field)?.message;
  const input = (field: Field, help?: string) => (
    <TextField
      key={field}
      name={field}
      label={FIELDS[field]}
      value={values[field]}
      onChange={set(field)}
      error={problem(field) !== undefined}
      helperText={problem(field) ?? help ?? ' '}
      size="small"
      inputMode="decimal"
      slotProps={{
        input: UNITS[field] ? { endAdornment: <InputAdornment position="end">{UNITS[field]}</InputAdornment> } : {},
      }}
    />
  );

  return (
    <Box sx={{ mt: 2 }} className="finanzierungsrechner">
      <Title title="Finanzierungsrechner" />
      <Card>
        <CardContent>
          <Box
            component="form"
            onSubmit={submit}
            noValidate
            sx={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(220px, 1fr))', gap: 2 }}
          >
            <TextField
              select
              name="immobilie"
              label="Immobilie"
              value={immobilie}
              onChange={(e) => pick(e.target.value)}
              error={problem('immobilie') !== undefined}
              helperText={problem('immobilie') ?? 'oder einen Kaufpreis eingeben'}
              size="small"
            >
              <MenuItem value="">–</MenuItem>
              {options.map((o) => (
                <MenuItem key={o.iri} value={o.iri}>
                  {o.adresse}
                </MenuItem>
              ))}
            </TextField>
            {input('kaufpreis')}
            {input('eigenkapital')}
            {input('zinssatz')}
            <Box>
              <RadioGroup row value={mode} onChange={(e) => setMode(e.target.value as typeof mode)}>
                <FormControlLabel value="tilgungssatz" control={<Radio size="small" />} label="Tilgung" />
                <FormControlLabel value="wunschrate" control={<Radio size="small" />} label="Wunschrate" />
              </RadioGroup>
              {mode === 'tilgungssatz' ? input('tilgungssatz') : input('wunschrate')}
            </Box>
            {input('zinsbindungJahre')}
            {input('anschlusszins', 'nach der Zinsbindung; leer: gleicher Zins')}
            {input('sondertilgung')}
            {input('sondertilgungAbJahr')}
            {input('sondertilgungMaxProzent', 'leer: ohne Obergrenze')}
            <Box sx={{ display: 'flex', alignItems: 'flex-start' }}>
              <Button type="submit" variant="contained" disabled={busy}>
                Berechnen
              </Button>
            </Box>
          </Box>
          {violations
            .filter((v) => !(v.propertyPath in FIELDS) && v.propertyPath !== 'immobilie')
            .map((v) => (
              <Alert severity="error" key={`${v.propertyPath}:${v.message}`} sx={{ mt: 1 }}>
                {v.propertyPath ? `${v.propertyPath}: ` : ''}
                {v.message}
              </Alert>
            ))}
          {error && (
            <Alert severity="error" sx={{ mt: 1 }}>
              {error}
            </Alert>
          )}
        </CardContent>
      </Card>
      {result && <Ergebnisse result={result} />}
    </Box>
  );
}

function Figure({ label, children, name }: { label: string; children: ReactNode; name: string }) {
  return (
    <Box data-figure={name}>
      <Typography variant="caption" color="text.secondary">
        {label}
      </Typography>
      <Typography variant="h6">{children}</Typography>
    </Box>
  );
}

function Ergebnisse({ result }: { result: Ergebnis }) {
  const laufzeit =
    result.laufzeitMonate === undefined
      ? 'nicht innerhalb von 100 Jahren'
      : `${Math.floor(result.laufzeitMonate / 12)} Jahre ${result.laufzeitMonate % 12} Monate`;
  return (
    <Card sx={{ mt: 2 }} className="ergebnis">
      <CardContent>
        <Box sx={{ display: 'grid', gridTemplateColumns: 'repeat(auto-fill, minmax(200px, 1fr))', gap: 2 }}>
          <Figure name="darlehensbetrag" label="Darlehensbetrag">
            {eur(result.darlehensbetrag)}
          </Figure>
          <Figure name="monatsrate" label="Monatsrate">
            {eur(result.monatsrate)}
          </Figure>
          <Figure name="anfaenglicheTilgung" label="Anfängliche Tilgung">
            {percent.format(result.anfaenglicheTilgung)} %
          </Figure>
          <Figure name="effektivzins" label="Effektivzins (ohne Gebühren gerechnet)">
            {percent.format(result.effektivzinsOhneGebuehren)} %
          </Figure>
          <Figure name="restschuldNachZinsbindung" label={`Restschuld nach ${result.zinsbindungJahre} Jahren`}>
            {eur(result.restschuldNachZinsbindung)}
          </Figure>
          <Figure name="zinsenZinsbindung" label="Zinsen in der Zinsbindung">
            {eur(result.summenZinsbindung.zinsen)}
          </Figure>
          <Figure name="zinsenGesamt" label="Zinsen gesamt">
            {eur(result.summenGesamt.zinsen)}
          </Figure>
          <Figure name="zahlungenGesamt" label="Zahlungen gesamt">
            {eur(result.summenGesamt.zahlungen)}
          </Figure>
          <Figure name="laufzeit" label="Laufzeit">
            {laufzeit}
          </Figure>
        </Box>
        <Chart rows={result.tilgungsplan} darlehen={result.darlehensbetrag} bindung={result.zinsbindungJahre} />
        <Table size="small" className="tilgungsplan">
          <TableHead>
            <TableRow>
              <TableCell>Jahr</TableCell>
              <TableCell align="right">Zinsen</TableCell>
              <TableCell align="right">Tilgung</TableCell>
              <TableCell align="right">Sondertilgung</TableCell>
              <TableCell align="right">Restschuld</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {result.tilgungsplan.map((row) => (
              <TableRow key={row.jahr} data-jahr={row.jahr}>
                <TableCell>{row.jahr}</TableCell>
                <TableCell align="right">{eur(row.zinsen)}</TableCell>
                <TableCell align="right">{eur(row.tilgung)}</TableCell>
                <TableCell align="right">{eur(row.sondertilgung)}</TableCell>
                <TableCell align="right">{eur(row.restschuld)}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </CardContent>
    </Card>
  );
}

const HEADROOM = 1.15;

const COLORS = { zinsen: '#e57373', tilgung: '#64b5f6', sondertilgung: '#1565c0', restschuld: '#2e7d32' };

/**
 * Per year: stacked bars of interest, repayment and special repayment (right axis) and the
 * remaining debt as a line (left axis); a dashed line marks the end of the fixed-rate period.
 */
function Chart({ rows, darlehen, bindung }: { rows: readonly Row[]; darlehen: number; bindung: number }) {
  const width = 900;
  const height = 320;
  const pad = { left: 70, right: 70, top: 20, bottom: 40 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const n = Math.max(rows.length, 1);
  const slot = plotW / n;
  const maxPayment = Math.max(1, ...rows.map((r) => r.zinsen + r.tilgung + r.sondertilgung));
  // Both axes end 15 % above their highest value: room for the legend.
  const yDebt = (v: number) => pad.top + plotH - (v / Math.max(darlehen * HEADROOM, 1)) * plotH;
  const yPay = (v: number) => (v / (maxPayment * HEADROOM)) * plotH;
  const x = (i: number) => pad.left + i * slot;
  const line = [`${x(0)},${yDebt(darlehen)}`, ...rows.map((r, i) => `${x(i + 1)},${yDebt(r.restschuld)}`)].join(' ');
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const step = Math.max(1, Math.ceil(n / 15));
  return (
    <Box sx={{ my: 2, overflowX: 'auto' }}>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        role="img"
        aria-label="Restschuld, Zinsen und Tilgung pro Jahr"
        className="tilgungschart"
        style={{ maxWidth: width, fontFamily: 'sans-serif', fontSize: 11 }}
      >
        {ticks.map((t) => (
          <g key={t}>
            <line
              x1={pad.left}
              x2={width - pad.right}
              y1={yDebt(darlehen * t)}
              y2={yDebt(darlehen * t)}
              stroke="#eee"
            />
            <text x={pad.left - 6} y={yDebt(darlehen * t) + 4} textAnchor="end" fill={COLORS.restschuld}>
              {compact.format(darlehen * t)} €
            </text>
            <text x={width - pad.right + 6} y={yDebt(darlehen * t) + 4} fill="#555">
              {compact.format(maxPayment * t)} €
            </text>
          </g>
        ))}
        {rows.map((r, i) => {
          const base = pad.top + plotH;
          const hz = yPay(r.zinsen);
          const ht = yPay(r.tilgung);
          const hs = yPay(r.sondertilgung);
          const bw = Math.max(1, slot * 0.7);
          const bx = x(i) + (slot - bw) / 2;
          return (
            <g key={r.jahr} data-bar={r.jahr}>
              <rect x={bx} y={base - hz} width={bw} height={hz} fill={COLORS.zinsen} />
              <rect x={bx} y={base - hz - ht} width={bw} height={ht} fill={COLORS.tilgung} />
              {hs > 0 && <rect x={bx} y={base - hz - ht - hs} width={bw} height={hs} fill={COLORS.sondertilgung} />}
              {(r.jahr % step === 0 || r.jahr === 1) && (
                <text x={x(i) + slot / 2} y={base + 14} textAnchor="middle" fill="#555">
                  {r.jahr}
                </text>
              )}
            </g>
          );
        })}
        {bindung <= n && (
          <line x1={x(bindung)} x2={x(bindung)} y1={pad.top} y2={pad.top + plotH} stroke="#999" strokeDasharray="4 3" />
        )}
        <polyline points={line} fill="none" stroke={COLORS.restschuld} strokeWidth={2.5} className="restschuld" />
        <text x={pad.left + plotW / 2} y={height - 6} textAnchor="middle" fill="#555">
          Jahr
        </text>
        {(
          [
            ['restschuld', 'Restschuld (links)'],
            ['zinsen', 'Zinsen (rechts)'],
            ['tilgung', 'Tilgung (rechts)'],
            ['sondertilgung', 'Sondertilgung (rechts)'],
          ] as const
        ).map(([key, label], i) => (
          <g key={key} transform={`translate(${pad.left + 10 + i * 170}, ${pad.top - 8})`}>
            <rect width={10} height={10} y={-9} fill={COLORS[key]} />
            <text x={14}>{label}</text>
          </g>
        ))}
      </svg>
    </Box>
  );
}
