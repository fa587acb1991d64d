// A spout written the way Apache Storm's storm.js runs spouts, with no library: every command is
// dispatched as soon as it is read, and its `sync` is written when the command's callback ends,
// so commands written ahead of their syncs run at the same time. `nextTuple` is rate limited the
// way storm-starter's randomsentence.js is: it emits one tuple, then ends PERIOD_MS later.
// Argument: a file to which it appends one line per event, for the test to read:
//   cmd <name> <in progress after it started>    a command arrived (and started)
//   emit <n> <monotonic ms>                      a tuple was emitted
'use strict';
const fs = require('fs');
const path = require('path');

const PERIOD_MS = 100;
const probe = process.argv[2];
const note = (line) => fs.appendFileSync(probe, line + '\n');
const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\nend\n');
const nowMs = () => Number(process.hrtime.bigint() / 1000000n);

let inProgress = 0;
let emitted = 0;
let handshakeDone = false;

function run(command, work) {
  inProgress += 1;
  note('cmd ' + command + ' ' + inProgress);
  work(() => {
    inProgress -= 1;
    send({ command: 'sync' });
  });
}

function dispatch(msg) {
  if (!handshakeDone) {
    handshakeDone = true;
    fs.closeSync(fs.openSync(path.join(msg.pidDir, String(process.pid)), 'w'));
    send({ pid: process.pid });
    return;
  }
  switch (msg.command) {
    case 'next':
      run('next', (done) => {
        emitted += 1;
        send({ command: 'emit', tuple: ['s' + emitted], id: 'm' + emitted, need_task_ids: false });
        note('emit ' + emitted + ' ' + nowMs());
        setTimeout(done, PERIOD_MS);
      });
      return;
    default: // activate, deactivate, ack, fail: end at once, as a spout with empty hooks does
      run(msg.command, (done) => setImmediate(done));
  }
}

let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\nend\n')) !== -1) {
    const text = buffer.slice(0, end);
    buffer = buffer.slice(end + 5);
    dispatch(JSON.parse(text));
  }
});
process.stdin.on('end', () => process.exit(0));
