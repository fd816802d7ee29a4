import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { download, DownloadError, filenameOfDisposition, filenameOfPath } from './download.js';

const options = { allowPrivate: true, timeoutMs: 2000, maxBytes: 1024, maxRedirects: 2, userAgent: 't' };

describe('download', () => {
  it('reads file names from Content-Disposition (filename* first) and from the path', () => {
    expect(filenameOfDisposition(`attachment; filename="a b.pdf"`)).toBe('a b.pdf');
    expect(filenameOfDisposition(`inline; filename=plain.txt; size=3`)).toBe('plain.txt');
    expect(filenameOfDisposition(`attachment; filename="x.csv"; filename*=UTF-8''%C3%BC.csv`)).toBe('ü.csv');
    expect(filenameOfDisposition(`attachment; filename*=UTF-8''%E0%A4%A`)).toBeUndefined();
    expect(filenameOfDisposition('attachment')).toBeUndefined();
    expect(filenameOfPath(new URL('https://h/files/r%C3%A9sum%C3%A9.pdf?sig=1'))).toBe('résumé.pdf');
    expect(filenameOfPath(new URL('https://h/'))).toBeUndefined();
  });

  it('refuses loopback, private and localhost targets before connecting unless private targets are allowed', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'http://[::1]:9/x', 'http://192.168.0.1/x']) {
      const err = await download(url, { ...options, allowPrivate: false }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DownloadError);
      expect((err as DownloadError).failure).toBe('blocked');
    }
  });

  it('gives the answer in one buffer that owns its memory, and stops reading at the limit', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/r') return void res.writeHead(301, { location: '/f' }).end();
      if (req.url === '/f') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
      res.writeHead(200);
      res.write(Buffer.alloc(1000));
      res.end(Buffer.alloc(1000));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const got = await download(`${base}/r`, options);
      expect(got).toMatchObject({ contentType: 'text/plain', filename: 'f' });
      expect(got.bytes.toString()).toBe('hello');
      expect(got.bytes.byteOffset === 0 && got.bytes.buffer.byteLength === got.bytes.length).toBe(true);
      const err = await download(`${base}/big`, options).catch((e: unknown) => e);
      expect((err as DownloadError).failure).toBe('too_large');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
