// Evaluates JSONata expressions with the reference implementation (the npm
// package "jsonata", pinned in the repository's package.json to the version
// AWS Step Functions runs) for the compiler/when differential tests.
//
// Input on stdin, one JSON document:
//   {"expressions": ["<jsonata>", ...], "bindings": [{"steps": {...}, ...}, ...]}
// Each binding object holds the variables ($steps, $vars, $trigger, ...).
// Every expression is compiled once and evaluated against an empty input
// with each binding object in turn.
//
// Output on stdout, one JSON document:
//   {"version": "2.0.6", "results": [[cell, ...], ...]}
// with results[expression][binding], where a cell is {"value": v},
// {"undefined": true} or {"error": "<code>: <message>"}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const jsonata = require('jsonata');
const { version } = require('jsonata/package.json');

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function describe(err) {
  const code = err && err.code ? err.code : 'error';
  const msg = err && err.message ? err.message : String(err);
  return `${code}: ${msg}`;
}

const input = JSON.parse(await readStdin());
const results = [];
for (const expr of input.expressions) {
  const row = [];
  let compiled;
  try {
    compiled = jsonata(expr);
  } catch (err) {
    for (let i = 0; i < input.bindings.length; i++) row.push({ error: describe(err) });
    results.push(row);
    continue;
  }
  for (const bindings of input.bindings) {
    try {
      const value = await compiled.evaluate({}, bindings);
      row.push(value === undefined ? { undefined: true } : { value });
    } catch (err) {
      row.push({ error: describe(err) });
    }
  }
  results.push(row);
}
process.stdout.write(JSON.stringify({ version, results }));
