// Evaluates JSONata expressions, each with its own variable bindings, with
// the reference implementation (the npm package "jsonata", pinned in the
// repository's package.json to the version AWS Step Functions runs), for
// the compiler's literal property test.
//
// Input on stdin, one JSON document:
//   {"cases": [{"expr": "<jsonata>", "bindings": {"name": value, ...}}, ...]}
// Output on stdout, one JSON document:
//   {"version": "2.0.6", "results": [cell, ...]}
// in input order, where a cell is {"value": v}, {"undefined": true} or
// {"error": "<code>: <message>"}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const jsonata = require('jsonata');
const { version } = require('jsonata/package.json');

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const results = [];
for (const c of input.cases) {
  try {
    const value = await jsonata(c.expr).evaluate({}, c.bindings || {});
    results.push(value === undefined ? { undefined: true } : { value });
  } catch (err) {
    results.push({ error: `${err && err.code ? err.code : 'error'}: ${err && err.message ? err.message : String(err)}` });
  }
}
process.stdout.write(JSON.stringify({ version, results }));
