import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync, fdatasyncSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LOAD_CPU, machineDescription, median, SERVER_CPU } from './harness.mjs';

/**
 * What the machine charges for the three things a server's ratio to its anchor is most sensitive
 * to, measured at the start of a run: a system call (write() of 64 bytes to /dev/null), a loopback
 * TCP round trip between a process on the server's CPU and one on the load's (each message wakes
 * the other CPU, which in a virtual machine can cost tens of microseconds), and an fdatasync of a
 * 4 KiB write in the temp directory. The same build's ratio has moved by half between days on this
 * machine (bench/README.md); these numbers say whether the machine moved. Medians; a few seconds.
 */
export async function machineCosts() {
  const devNull = openSync('/dev/null', 'w');
  const bytes = Buffer.alloc(64);
  const perWrite = [];
  for (let round = 0; round < 5; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 20_000; i++) writeSync(devNull, bytes);
    perWrite.push(Number(process.hrtime.bigint() - t0) / 20_000);
  }
  closeSync(devNull);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-costs-'));
  const syncs = [];
  try {
    const fd = openSync(path.join(dir, 'f'), 'w');
    const page = Buffer.alloc(4096, 1);
    for (let i = 0; i < 40; i++) {
      writeSync(fd, page);
      const t0 = process.hrtime.bigint();
      fdatasyncSync(fd);
      syncs.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    closeSync(fd);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  return {
    syscallNs: Math.round(median(perWrite)),
    roundTripUs: await crossCpuRoundTrip(),
    fdatasyncUs: Math.round(median(syncs)),
  };
}

/** The costs as one line for a results header. */
export const formatCosts = (c) =>
  `machine costs: write() ${c.syscallNs} ns, loopback round trip CPU ${SERVER_CPU}↔${LOAD_CPU} ${c.roundTripUs ?? '–'} µs, fdatasync ${c.fdatasyncUs} µs`;

const ECHO = `const s=require('net').createServer(c=>{c.setNoDelay(true);c.on('data',d=>c.write(d))}).listen(0,'127.0.0.1',()=>console.log(s.address().port));`;
const PING = `const n=2000,c=require('net').connect(+process.argv[1],'127.0.0.1',()=>{c.setNoDelay(true);const t=[];let i=0,t0;const go=()=>{t0=process.hrtime.bigint();c.write('x')};c.on('data',()=>{t.push(Number(process.hrtime.bigint()-t0)/1e3);if(++i<n)go();else{t.sort((a,b)=>a-b);console.log(t[n>>1].toFixed(1));c.destroy()}});go()});`;

/** Median µs of 2,000 one-byte request/answer round trips between two pinned processes; undefined without taskset. */
async function crossCpuRoundTrip() {
  if (spawnSync('taskset', ['-c', '0', 'true']).status !== 0) return undefined;
  const echo = spawn('taskset', ['-c', LOAD_CPU, process.execPath, '-e', ECHO], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    const port = await new Promise((resolve, reject) => {
      echo.stdout.once('data', (d) => resolve(String(d).trim()));
      echo.once('exit', () => reject(new Error('the echo process ended')));
    });
    const ping = spawnSync('taskset', ['-c', SERVER_CPU, process.execPath, '-e', PING, port], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    const us = Number(ping.stdout.trim());
    return Number.isFinite(us) && us > 0 ? us : undefined;
  } finally {
    echo.kill();
  }
}

/** harness.machineDescription() and the machine's costs, for a results header. */
export async function machineWithCosts() {
  return `${machineDescription()}; ${formatCosts(await machineCosts())}`;
}
