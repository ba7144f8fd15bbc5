// The box's JSONata evaluator: the reference jsonata@2.0.6 (the version
// Step Functions runs, pinned in package-lock.json), serving moto's
// interpreter over stdin/stdout, one JSON object a line.
//
//   request   {"id": 7, "expr": "($x := 1; $x + 1)"}
//   answer    {"id": 7, "ok": true, "value": 2}
//             {"id": 7, "ok": true, "undefined": true}
//             {"id": 7, "ok": false, "code": "S0202", "message": "..."}
//
// moto sends every expression with its variables bound in front of it
// (no input document), so an expression is evaluated against undefined.
// Requests are answered in order, one at a time.
"use strict";

const path = require("path");
const readline = require("readline");

const jsonataDir = process.argv[2];
if (!jsonataDir) {
  process.stderr.write("usage: node jsonata.js <node_modules/jsonata>\n");
  process.exit(2);
}
const jsonata = require(path.resolve(jsonataDir));
const version = require(path.join(path.resolve(jsonataDir), "package.json")).version;

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function evaluate(req) {
  try {
    const value = await jsonata(req.expr).evaluate(undefined);
    if (value === undefined) {
      return { id: req.id, ok: true, undefined: true };
    }
    // Results travel as JSON, as Step Functions hands them on: a
    // sequence becomes its array; a function has no JSON form.
    const text = JSON.stringify(value);
    if (text === undefined) {
      return { id: req.id, ok: true, undefined: true };
    }
    return { id: req.id, ok: true, value: JSON.parse(text) };
  } catch (err) {
    return {
      id: req.id,
      ok: false,
      code: (err && err.code) || "UNKNOWN",
      message: (err && (err.message || String(err))) || "unknown error",
    };
  }
}

let chain = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    answer({ id: null, ok: false, code: "BRIDGE", message: "request is not JSON: " + err.message });
    return;
  }
  chain = chain.then(() => evaluate(req)).then(answer);
});
rl.on("close", () => {
  chain.then(() => process.exit(0));
});
answer({ ready: true, jsonata: version });
