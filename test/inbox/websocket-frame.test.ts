import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { textFrame } from '../../src/inbox/realtime/websocket.server.js';

/**
 * The realtime server frames each event once and writes the prepared bytes to every client's
 * socket, beside ws's own sends (acknowledgements used to go through `ws.send`, pings still do).
 * A real ws client on loopback must read them as the same text frames, in the order written, at
 * every length encoding of RFC 6455 (7-bit, 16-bit and 64-bit lengths).
 */
describe('realtime: prepared text frames', () => {
  it('read by a ws client as the frames ws.send would write, in order, beside ws.send and ping', async () => {
    const http = createServer();
    const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
    const texts = [
      '{"a":1}',
      'é'.repeat(100),
      'x'.repeat(125),
      'y'.repeat(126),
      'z'.repeat(65_535),
      'w'.repeat(65_536),
      JSON.stringify({ big: 'v'.repeat(300 * 1024) }),
    ];
    http.on('upgrade', (request, socket: Duplex, head) =>
      wss.handleUpgrade(request, socket, head, (ws) => {
        for (const [i, text] of texts.entries()) {
          socket.write(textFrame(text));
          ws.ping();
          ws.send(`sent ${i}`);
        }
      }),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/`, {
        perMessageDeflate: false,
      });
      const received: { text: string; binary: boolean }[] = [];
      let pings = 0;
      client.on('ping', () => pings++);
      await new Promise<void>((resolve, reject) => {
        client.on('error', reject);
        client.on('message', (data, binary) => {
          received.push({ text: String(data), binary });
          if (received.length === texts.length * 2) resolve();
        });
      });
      expect(received).toEqual(
        texts.flatMap((text, i) => [
          { text, binary: false },
          { text: `sent ${i}`, binary: false },
        ]),
      );
      expect(pings).toBe(texts.length);
      client.close();
    } finally {
      wss.close();
      http.close();
    }
  });
});
