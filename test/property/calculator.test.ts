import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../support/http.js';
import { dialects, startPropertyServer, type Account, type PropertyTestServer } from '../support/property-server.js';
import { createImmobilie, expectHydraError, expectViolationAt, immobilieBody, type Item } from './fixtures.js';

/**
 * Issue 12 §1 and §3, issue 13 items 15 and 16, on both dialects: the computed costs (rounding,
 * missing input), the financing resource against an independent closed-form calculation, PUT
 * and PATCH on every writable resource, If-Match (412), ids that are never reused, e-mail
 * uniqueness regardless of case, and the second of two concurrent deletes answering 404.
 */

/** The annuity formulas in floating point, written independently of the service's cent loop. */
function annuity(loan: number, zins: number, tilgung: number) {
  const i = zins / 100 / 12;
  const rate = Math.round(((loan * (zins + tilgung)) / 100 / 12) * 100) / 100;
  const balanceAfter = (months: number) =>
    i === 0 ? loan - rate * months : loan * (1 + i) ** months - (rate * ((1 + i) ** months - 1)) / i;
  const months = i === 0 ? Math.ceil(loan / rate) : Math.ceil(-Math.log(1 - (i * loan) / rate) / Math.log(1 + i));
  return { rate, balanceAfter, months };
}

describe.each(dialects)('%s: calculator, PUT/PATCH, If-Match, ids, e-mail case, double delete', (dialect) => {
  let server: PropertyTestServer;
  let url: string;
  let user: Account;
  let technical: Account;
  let admin: Account;
  let other: Account;

  beforeAll(async () => {
    server = await startPropertyServer({ dialect });
    url = server.url;
    [user, technical, admin, other] = await Promise.all([
      server.createAccount('user'),
      server.createAccount('technical'),
      server.createAccount('admin'),
      server.createAccount('user'),
    ]);
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('computed costs of Immobilie', () => {
    it('rounds each line half up to the cent, exactly (no binary drift)', async () => {
      // 0.1 EUR in Bayern (3.5 %): tax 0.0035 → 0.00; notary 0.0015 → 0.00; land registry 0.0005 → 0.00.
      // 333333.33 EUR in NRW (6.5 %): 21666.66645 → 21666.67; notary 4999.99995 → 5000.00;
      // land registry 1666.66665 → 1666.67; broker 11900.0 (3.57 % = 11899.9998…) → 11900.00.
      const item = await createImmobilie(url, user.key, {
        kaufpreis: 333333.33,
        wohnflaeche: 3,
        bundesland: '/api/bundeslands/10',
      });
      expect(item.preisProQuadratmeter).toBe(111111.11);
      expect(item.grunderwerbsteuer).toBe(21666.67);
      expect(item.kaufnebenkosten).toEqual({
        grunderwerbsteuer: 21666.67,
        notar: 5000,
        grundbuch: 1666.67,
        makler: 11900,
        summe: 40233.34,
      });
      expect(item.gesamtkosten).toBe(373566.67);
      // Half a cent rounds up: 0.15 EUR/m² × … 1.005 / 1 → 1.01 (binary 1.005 would round down).
      const half = await createImmobilie(url, user.key, {
        kaufpreis: 1.005,
        wohnflaeche: 1,
        bundesland: '/api/bundeslands/2',
      });
      expect(half.preisProQuadratmeter).toBe(1.01);
      expect(half.gesamtkosten).toBe(1.01 + (half.kaufnebenkosten as { summe: number }).summe);
    });

    it('absent inputs give absent results, never NaN or a division by zero', async () => {
      const noPrice = await createImmobilie(url, user.key, { kaufpreis: undefined });
      for (const key of ['preisProQuadratmeter', 'grunderwerbsteuer', 'kaufnebenkosten', 'gesamtkosten'])
        expect(noPrice).not.toHaveProperty(key);
      const zeroArea = await createImmobilie(url, user.key, { wohnflaeche: 0 });
      expect(zeroArea).not.toHaveProperty('preisProQuadratmeter');
      expect(zeroArea.grunderwerbsteuer).toBe(23100);
      const noArea = await createImmobilie(url, user.key, { wohnflaeche: undefined });
      expect(noArea).not.toHaveProperty('preisProQuadratmeter');
      const zeroPrice = await createImmobilie(url, user.key, { kaufpreis: 0 });
      expect(zeroPrice.preisProQuadratmeter).toBe(0);
      expect(zeroPrice.gesamtkosten).toBe(0);
      const text = (await api(url, noPrice['@id'], { key: user.key })).text;
      expect(text).not.toMatch(/NaN|Infinity|null/);
    });

    it("follows its state's rate, which technical may edit (PATCH) and a user may not; no rate, no tax", async () => {
      const item = await createImmobilie(url, user.key, { bundesland: '/api/bundeslands/16' });
      expect(item.grunderwerbsteuer).toBe(21000); // Thüringen 5.0 %
      expect(
        (await api(url, '/api/bundeslands/16', { method: 'PATCH', key: user.key, body: { grunderwerbsteuerSatz: 1 } }))
          .status,
      ).toBe(403);
      const changed = await api(url, '/api/bundeslands/16', {
        method: 'PATCH',
        key: technical.key,
        body: { grunderwerbsteuerSatz: 6.5 },
      });
      expect(changed.status).toBe(200);
      expect((changed.body as Item).grunderwerbsteuerSatz).toBe(6.5);
      expect((await api(url, item['@id'], { key: user.key })).body).toMatchObject({
        grunderwerbsteuer: 27300,
        gesamtkosten: 420000 + 27300 + 6300 + 2100 + 14994,
      });
      expectViolationAt(
        await api(url, '/api/bundeslands/16', {
          method: 'PATCH',
          key: technical.key,
          body: { grunderwerbsteuerSatz: 101 },
        }),
        'grunderwerbsteuerSatz',
      );
      const cleared = await api(url, '/api/bundeslands/16', {
        method: 'PATCH',
        key: admin.key,
        body: { grunderwerbsteuerSatz: null },
      });
      expect(cleared.status).toBe(200);
      const after = (await api(url, item['@id'], { key: user.key })).body as Item;
      expect(after).not.toHaveProperty('grunderwerbsteuer');
      expect(after).not.toHaveProperty('gesamtkosten');
      expect(after.kaufnebenkosten).toEqual({ notar: 6300, grundbuch: 2100, makler: 14994 });
      await api(url, '/api/bundeslands/16', { method: 'PATCH', key: admin.key, body: { grunderwerbsteuerSatz: 5 } });
    });

    it('computed fields are read-only: values sent for them are ignored', async () => {
      const res = await api(url, '/api/immobilies', {
        method: 'POST',
        key: user.key,
        body: immobilieBody({ grunderwerbsteuer: 1, gesamtkosten: 2 } as never),
      });
      expect(res.status).toBe(201);
      expect((res.body as Item).grunderwerbsteuer).toBe(23100);
    });

    it('collections carry the computed fields of every member (and plain JSON too)', async () => {
      const res = await api(url, '/api/immobilies?itemsPerPage=100', { key: user.key, accept: 'application/json' });
      const list = res.body as Record<string, unknown>[];
      expect(list.length).toBeGreaterThan(3);
      for (const m of list) if (typeof m.kaufpreis === 'number') expect(m).toHaveProperty('kaufnebenkosten');
    });
  });

  describe('financing (non-persisted resource)', () => {
    const post = (body: unknown, key: string | null = user.key) =>
      api(url, '/api/finanzierungsrechners', { method: 'POST', key: key ?? undefined, body });

    it.each([
      [400000, 80000, 3.8, 2, 10],
      [250000, 50000, 4.25, 1.5, 15],
      [99999.99, 0, 0, 5, 5],
    ])(
      'price %s, equity %s, %s %% interest, %s %% repayment, %s years fixed: matches the closed-form annuity',
      async (kaufpreis, eigenkapital, zinssatz, tilgungssatz, zinsbindungJahre) => {
        const res = await post({ kaufpreis, eigenkapital, zinssatz, tilgungssatz, zinsbindungJahre });
        expect(res.status, res.text).toBe(200);
        expect(res.headers.get('location')).toBeNull();
        const body = res.body as Record<string, unknown>;
        expect(body['@type']).toBe('Finanzierungsrechner');
        expect(body['@id']).toMatch(/^\/\.well-known\/genid\/[0-9a-f]+$/);
        const loan = kaufpreis - eigenkapital;
        const ref = annuity(loan, zinssatz, tilgungssatz);
        expect(body.darlehensbetrag).toBeCloseTo(loan, 2);
        expect(body.monatsrate).toBeCloseTo(ref.rate, 2);
        // Monthly rounding of interest to the cent moves the debt by well under a cent a month.
        expect(
          Math.abs((body.restschuldNachZinsbindung as number) - ref.balanceAfter(zinsbindungJahre * 12)),
        ).toBeLessThan(zinsbindungJahre * 12 * 0.01);
        expect(body.laufzeitMonate).toBe(ref.months);
        expect(body.abbezahltImJahr).toBe(Math.ceil(ref.months / 12));
        const plan = body.tilgungsplan as { jahr: number; zinsen: number; tilgung: number; restschuld: number }[];
        expect(plan).toHaveLength(Math.ceil(ref.months / 12));
        expect(plan.at(-1)?.restschuld).toBe(0);
        const repaid = plan.reduce((sum, y) => sum + Math.round(y.tilgung * 100), 0);
        expect(repaid).toBe(Math.round(loan * 100));
        for (const year of plan.slice(0, 3)) {
          expect(Math.abs(year.restschuld - ref.balanceAfter(year.jahr * 12))).toBeLessThan(year.jahr * 12 * 0.01);
          expect(year.zinsen + year.tilgung).toBeCloseTo(ref.rate * 12, 1);
        }
      },
    );

    it('takes the price from a property the caller may see, and no other', async () => {
      const own = await createImmobilie(url, user.key, { kaufpreis: 300000 });
      const res = await post({
        immobilie: own['@id'],
        eigenkapital: 60000,
        zinssatz: 3,
        tilgungssatz: 2,
        zinsbindungJahre: 10,
      });
      expect(res.status, res.text).toBe(200);
      expect((res.body as Record<string, unknown>).darlehensbetrag).toBe(240000);
      expect((res.body as Record<string, unknown>).monatsrate).toBe(1000);
      const foreign = await createImmobilie(url, other.key, { kaufpreis: 300000 });
      expectViolationAt(
        await post({ immobilie: foreign['@id'], eigenkapital: 1, zinssatz: 3, tilgungssatz: 2, zinsbindungJahre: 10 }),
        'immobilie',
      );
      expectViolationAt(
        await post({
          immobilie: '/api/immobilies/999999',
          eigenkapital: 1,
          zinssatz: 3,
          tilgungssatz: 2,
          zinsbindungJahre: 10,
        }),
        'immobilie',
      );
    });

    it('answers violations for bad input, 401 without a key, 405 for other methods, and stores nothing', async () => {
      expectViolationAt(
        await post({ eigenkapital: 1, zinssatz: 3, tilgungssatz: 2, zinsbindungJahre: 10 }),
        'kaufpreis',
      );
      expectViolationAt(
        await post({ kaufpreis: 100, eigenkapital: 100, zinssatz: 3, tilgungssatz: 2, zinsbindungJahre: 10 }),
        'eigenkapital',
      );
      expectViolationAt(
        await post({ kaufpreis: 100, eigenkapital: 1, zinssatz: 3, tilgungssatz: 0, zinsbindungJahre: 10 }),
        'tilgungssatz',
      );
      expectViolationAt(
        await post({ kaufpreis: 100, eigenkapital: 1, zinssatz: 3, tilgungssatz: 2, zinsbindungJahre: 0 }),
        'zinsbindungJahre',
      );
      expectViolationAt(
        await post({ kaufpreis: 100, eigenkapital: 1, zinssatz: 'x', tilgungssatz: 2, zinsbindungJahre: 5 }),
        'zinssatz',
      );
      const missing = await post({});
      expect(missing.status).toBe(400);
      expect(
        (missing.body as { violations: { propertyPath: string }[] }).violations.map((v) => v.propertyPath).sort(),
      ).toEqual(['eigenkapital', 'zinsbindungJahre', 'zinssatz']);
      expectHydraError(
        await post({ kaufpreis: 1, eigenkapital: 0, zinssatz: 1, tilgungssatz: 1, zinsbindungJahre: 1 }, null),
        401,
      );
      expectHydraError(
        await api(url, '/api/finanzierungsrechners', { key: user.key }),
        405,
        'Method Not Allowed (Allow: POST)',
      );
      expect((await api(url, '/api/finanzierungsrechners/1', { key: user.key })).status).toBe(404);
    });
  });

  describe('financing: Sondertilgung, Anschlusszins, Wunschrate, sums, monthly plan (issue 31)', () => {
    const post = (body: unknown) => api(url, '/api/finanzierungsrechners', { method: 'POST', key: user.key, body });
    const base = { kaufpreis: 400000, eigenkapital: 50000, zinssatz: 3.9, zinsbindungJahre: 10 };
    type Row = { zinsen: number; tilgung: number; sondertilgung: number; restschuld: number };

    it('answers every new output; the monthly plan only when asked for', async () => {
      // bauprojektexperte.de/tilgungsrechner, Szenario B: 350,000 € at 3.9 % with a Wunschrate of 1,600 €,
      // "1. Rate ≈ 1.138 € Zins · 462 € Tilgung".
      const res = await post({
        ...base,
        wunschrate: 1600,
        anschlusszins: 5,
        sondertilgung: 20000,
        sondertilgungAbJahr: 2,
        sondertilgungMaxProzent: 5,
        monatlich: true,
      });
      expect(res.status, res.text).toBe(200);
      const body = res.body as Record<string, unknown>;
      expect(body).toMatchObject({
        darlehensbetrag: 350000,
        monatsrate: 1600,
        wunschrate: 1600,
        anfaenglicheTilgung: 1.59,
        effektivzinsOhneGebuehren: 3.97,
        anschlusszins: 5,
        sondertilgung: 20000,
        sondertilgungAbJahr: 2,
        sondertilgungMaxProzent: 5,
      });
      expect(body).not.toHaveProperty('monatlich');
      const monate = body.monatsplan as (Row & { monat: number })[];
      expect(monate[0]).toEqual({
        monat: 1,
        jahr: 1,
        zinsen: 1137.5,
        tilgung: 462.5,
        sondertilgung: 0,
        restschuld: 349537.5,
      });
      const jahre = body.tilgungsplan as (Row & { jahr: number })[];
      expect(jahre[0]?.sondertilgung).toBe(0);
      expect(jahre[1]?.sondertilgung).toBe(17500); // capped at 5 % of 350,000
      expect(monate[23]?.sondertilgung).toBe(17500);
      const sum = (rows: readonly Row[], key: keyof Row) =>
        rows.reduce((t, r) => t + Math.round(r[key] * 100), 0) / 100;
      const gesamt = body.summenGesamt as { zinsen: number; tilgung: number; sondertilgung: number };
      expect(sum(jahre, 'zinsen')).toBe(gesamt.zinsen);
      expect(sum(jahre, 'sondertilgung')).toBe(gesamt.sondertilgung);
      expect(Math.round((gesamt.tilgung + gesamt.sondertilgung) * 100)).toBe(35000000);
      const bindung = body.summenZinsbindung as {
        zinsen: number;
        tilgung: number;
        sondertilgung: number;
        zahlungen: number;
      };
      expect(sum(jahre.slice(0, 10), 'zinsen')).toBe(bindung.zinsen);
      expect(bindung.zahlungen).toBe(
        Math.round((bindung.zinsen + bindung.tilgung + bindung.sondertilgung) * 100) / 100,
      );
      expect(jahre[9]?.restschuld).toBe(body.restschuldNachZinsbindung);

      const yearly = (await post({ ...base, tilgungssatz: 2 })).body as Record<string, unknown>;
      expect(yearly).not.toHaveProperty('monatsplan');
      expect(yearly).not.toHaveProperty('wunschrate');
      expect(yearly).not.toHaveProperty('sondertilgung');
      expect(yearly.anfaenglicheTilgung).toBe(2);
      expect((yearly.tilgungsplan as Row[]).every((r) => r.sondertilgung === 0)).toBe(true);
    });

    it('refuses neither or both of tilgungssatz and wunschrate, a rate below the interest, bad new inputs', async () => {
      expectViolationAt(await post(base), 'tilgungssatz');
      expectViolationAt(await post({ ...base, tilgungssatz: 2, wunschrate: 1600 }), 'tilgungssatz');
      // 350,000 × 3.9 % / 12 = 1,137.50 € interest in the first month.
      expectViolationAt(await post({ ...base, wunschrate: 1137.5 }), 'wunschrate');
      expect((await post({ ...base, wunschrate: 1137.51 })).status).toBe(200);
      expectViolationAt(
        await post({ ...base, tilgungssatz: 2, sondertilgungMaxProzent: 101 }),
        'sondertilgungMaxProzent',
      );
      expectViolationAt(await post({ ...base, tilgungssatz: 2, sondertilgung: -1 }), 'sondertilgung');
      expectViolationAt(await post({ ...base, tilgungssatz: 2, sondertilgungAbJahr: 0 }), 'sondertilgungAbJahr');
      expectViolationAt(await post({ ...base, tilgungssatz: 2, anschlusszins: 'hoch' }), 'anschlusszins');
      expectViolationAt(await post({ ...base, tilgungssatz: 2, monatlich: 'ja' }), 'monatlich');
    });
  });

  describe('rental yield of Immobilie (issue 31)', () => {
    it('kaltmiete gives bruttomietrendite and kaufpreisfaktor; without it they are absent', async () => {
      const item = await createImmobilie(url, user.key, { kaufpreis: 420000, kaltmiete: 1250 } as never);
      expect(item).toMatchObject({ kaltmiete: 1250, bruttomietrendite: 3.57, kaufpreisfaktor: 28 });
      const cleared = await api(url, item['@id'], { method: 'PATCH', key: user.key, body: { kaltmiete: null } });
      expect(cleared.status).toBe(200);
      for (const key of ['kaltmiete', 'bruttomietrendite', 'kaufpreisfaktor'])
        expect(cleared.body).not.toHaveProperty(key);
      expectViolationAt(
        await api(url, item['@id'], { method: 'PATCH', key: user.key, body: { kaltmiete: -5 } }),
        'kaltmiete',
      );
    });
  });

  describe('PUT and PATCH on every writable resource', () => {
    it('PUT replaces an Immobilie (absent optional fields reset, verwalter kept) and answers its costs', async () => {
      const created = await createImmobilie(url, user.key);
      const res = await api(url, created['@id'], {
        method: 'PUT',
        key: user.key,
        body: { adresse: 'Neu 1', typ: 'wohnung', bundesland: '/api/bundeslands/2', kaufpreis: 100000 },
      });
      expect(res.status, res.text).toBe(200);
      const body = res.body as Item;
      expect(body).toMatchObject({ adresse: 'Neu 1', typ: 'wohnung', verwalter: user.iri, grunderwerbsteuer: 3500 });
      expect(body).not.toHaveProperty('wohnflaeche');
      expect(body).not.toHaveProperty('heizungstyp');
      expectViolationAt(
        await api(url, created['@id'], {
          method: 'PUT',
          key: user.key,
          body: { typ: 'haus', bundesland: '/api/bundeslands/2' },
        }),
        'adresse',
      );
    });

    it('PATCH on Heizungstyp and User changes only what is sent', async () => {
      const h = await api(url, '/api/heizungstyps', {
        method: 'POST',
        key: admin.key,
        body: { name: `Ofen ${dialect}` },
      });
      const patched = await api(url, (h.body as Item)['@id'], {
        method: 'PATCH',
        key: technical.key,
        body: { name: `Kachelofen ${dialect}` },
      });
      expect(patched.status).toBe(200);
      expect((patched.body as Item).name).toBe(`Kachelofen ${dialect}`);
      const me = await api(url, user.iri, { method: 'PATCH', key: user.key, body: { name: 'Neuer Name' } });
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ name: 'Neuer Name', email: user.email, role: 'user' });
      expect((await api(url, user.iri, { method: 'PATCH', key: user.key, body: { role: 'admin' } })).status).toBe(403);
    });
  });

  describe('If-Match', () => {
    it('a stale ETag answers 412 and changes nothing; the current one (either format) or * passes', async () => {
      const created = await createImmobilie(url, user.key);
      const ld = await api(url, created['@id'], { key: user.key });
      const json = await api(url, created['@id'], { key: user.key, accept: 'application/json' });
      const etag = ld.headers.get('etag') as string;
      const ok = await api(url, created['@id'], {
        method: 'PATCH',
        key: user.key,
        body: { zimmer: 9 },
        headers: { 'if-match': etag },
      });
      expect(ok.status).toBe(200);
      for (const stale of [etag, json.headers.get('etag') as string, '"nope"', `W/${etag}`]) {
        const res = await api(url, created['@id'], {
          method: 'PATCH',
          key: user.key,
          body: { zimmer: 1 },
          headers: { 'if-match': stale },
        });
        expectHydraError(res, 412);
      }
      expectHydraError(
        await api(url, created['@id'], {
          method: 'PUT',
          key: user.key,
          body: immobilieBody(),
          headers: { 'if-match': etag },
        }),
        412,
      );
      expectHydraError(
        await api(url, created['@id'], { method: 'DELETE', key: user.key, headers: { 'if-match': etag } }),
        412,
      );
      expect(((await api(url, created['@id'], { key: user.key })).body as Item).zimmer).toBe(9);
      const currentJson = (await api(url, created['@id'], { key: user.key, accept: 'application/json' })).headers.get(
        'etag',
      ) as string;
      expect(
        (
          await api(url, created['@id'], {
            method: 'PATCH',
            key: user.key,
            body: { zimmer: 2 },
            headers: { 'if-match': `"x", ${currentJson}` },
          })
        ).status,
      ).toBe(200);
      expect(
        (await api(url, created['@id'], { method: 'DELETE', key: user.key, headers: { 'if-match': '*' } })).status,
      ).toBe(204);
      // Existence and access still come first: 404, not 412, for what the caller cannot see.
      expectHydraError(
        await api(url, created['@id'], { method: 'PATCH', key: user.key, body: {}, headers: { 'if-match': '"x"' } }),
        404,
      );
    });
  });

  describe('ids and deletes', () => {
    it('the id of a deleted last record is never given out again', async () => {
      for (const [path, body, key] of [
        ['/api/immobilies', immobilieBody(), user.key],
        ['/api/heizungstyps', { name: `Temp ${dialect}` }, admin.key],
        ['/api/users', { name: 'Temp', email: `temp-${dialect}-${Date.now()}@example.org` }, undefined],
      ] as const) {
        const first = await api(url, path, { method: 'POST', key, body });
        const id = (first.body as Item).id;
        expect((await api(url, (first.body as Item)['@id'], { method: 'DELETE', key: key ?? admin.key })).status).toBe(
          204,
        );
        const again = await api(url, path, { method: 'POST', key, body });
        expect(again.status, again.text).toBe(201);
        expect((again.body as Item).id, path).toBeGreaterThan(id);
      }
    });

    it('of two simultaneous DELETEs of one property, one answers 204 and the other 404', async () => {
      for (let round = 0; round < 5; round++) {
        const item = await createImmobilie(url, user.key);
        const statuses = (
          await Promise.all([1, 2].map(() => api(url, item['@id'], { method: 'DELETE', key: user.key })))
        )
          .map((r) => r.status)
          .sort();
        expect(statuses).toEqual([204, 404]);
      }
    });
  });

  describe('e-mail uniqueness regardless of case', () => {
    it('A@x.de, a@x.de and A@X.DE are one account; a user may change the case of their own address', async () => {
      const local = `Case-${dialect}-${Date.now()}`;
      const first = await api(url, '/api/users', {
        method: 'POST',
        body: { name: 'Case', email: `${local}@Example.org` },
      });
      expect(first.status).toBe(201);
      for (const email of [`${local.toLowerCase()}@example.org`, `${local.toUpperCase()}@EXAMPLE.ORG`]) {
        const res = await api(url, '/api/users', { method: 'POST', body: { name: 'Case', email } });
        expect(res.status, email).toBe(400);
        expect((res.body as { violations: unknown[] }).violations).toEqual([
          expect.objectContaining({ propertyPath: 'email', message: 'This value is already used.' }),
        ]);
      }
      const me = first.body as Item & { apiKey: string };
      const own = await api(url, me['@id'], {
        method: 'PATCH',
        key: me.apiKey,
        body: { email: `${local.toLowerCase()}@example.org` },
      });
      expect(own.status, own.text).toBe(200);
      const clash = await api(url, user.iri, {
        method: 'PATCH',
        key: user.key,
        body: { email: `${local.toUpperCase()}@example.org` },
      });
      expectViolationAt(clash, 'email');
    });

    it('concurrent registrations differing only in case create one account', async () => {
      const local = `race-${dialect}-${Date.now()}`;
      const results = await Promise.all(
        [`${local}@x.de`, `${local.toUpperCase()}@x.de`, `${local}@X.DE`].map((email) =>
          api(url, '/api/users', { method: 'POST', body: { name: 'Race', email } }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 400, 400]);
    });
  });
});
