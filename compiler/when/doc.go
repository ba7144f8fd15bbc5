// Package when parses a step's when: condition — a Jinja-compatible
// boolean expression — and lowers it to a JSONata expression that a Step
// Functions Choice state can use as its Condition.
//
// The compiler calls Parse on the YAML text, checks the references that
// Paths lists (steps.<name> must name an earlier step), then calls
// Condition (or JSONata) with a Scope that says where each root name
// reads from in the state machine. Parse errors are *Error values that
// carry the byte offset, line and column inside the condition, so the
// compiler can report file:line:col.
//
// # Grammar
//
// In EBNF; keywords are case-sensitive, whitespace separates tokens:
//
//	condition  = or_expr .
//	or_expr    = and_expr { "or" and_expr } .
//	and_expr   = not_expr { "and" not_expr } .
//	not_expr   = "not" not_expr | comparison .
//	comparison = operand [ comp_op operand ] .      (no chains: a < b < c is an error)
//	comp_op    = "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in" .
//	operand    = primary [ "is" [ "not" ] test ] .
//	test       = "defined" | "undefined" | "none" | "None" .
//	primary    = literal | path | "(" or_expr ")" .
//	path       = name { "." name | "[" string "]" } .
//	literal    = string | [ "-" ] number | "true" | "True" | "false" | "False"
//	           | "none" | "None" | "null" | list .
//	list       = "[" [ literal { "," literal } [ "," ] ] "]" .
//	name       = ( letter | "_" ) { letter | digit | "_" } .   (ASCII)
//	number     = digit { digit } [ "." digit { digit } ] [ ( "e" | "E" ) [ "+" | "-" ] digit { digit } ] .
//	string     = "'" … "'" | '"' … '"' .   (Python escapes: \\ \' \" \n \t \r \a \b \f \v \ooo \xhh \uhhhh \Uhhhhhhhh)
//
// The operands of a comparison and of a test are values: a path or a
// literal. A bare value in boolean position is tested for truthiness.
// Comparisons that can never succeed because of a literal's type
// (steps.x.n < none, 1 in "abc", x in 5) are rejected by Parse.
//
// A step name with hyphens is written steps["first-line-triage"] or with
// underscores, steps.first_line_triage (the runtime keeps both keys).
// Not supported, each with its own error: {{ }} or {% %} around the
// condition, filters (|), arithmetic, function calls, indexing by
// position (x[0]), object literals.
//
// # Meaning
//
// A condition means what Jinja2's {% if %} means under ChainableUndefined
// (a missing key, at any depth, is undefined rather than an error), and
// where Jinja would raise, the condition is false. An error propagates
// like an exception: "not", "and" and "or" do not turn it into a value,
// but short-circuiting skips it (a or b never evaluates b when a is
// truthy). Values are JSON: null, booleans, numbers, strings, arrays,
// objects, and undefined when a path does not resolve.
//
//	expression        result
//	x.k               the value under key k when x is an object holding k; otherwise undefined
//	                  (a key of a list or of a string is undefined, as in Jinja: no mapping over lists)
//	x (truthiness)    false for undefined, null, false, 0, "", [] and {}; true otherwise
//	x is defined      true iff the path resolves: a key holding null is defined
//	x is none         true iff x is JSON null (undefined is not none)
//	x == y            false if either side is undefined; otherwise deep equality where 1 == 1.0,
//	                  "1" != 1, true != 1, null == null, lists and objects compare element-wise
//	x != y            not (x == y): true when either side is undefined
//	x < y, <=, >, >=  defined only for two numbers or two strings (strings by UTF-16 code units);
//	                  anything else, undefined included, is an error
//	x in list         true iff some item == x; false when x is undefined
//	x in string       substring test; an error unless x is a string
//	x in object       key test: x a string that is a key; false for undefined, null, numbers and
//	                  booleans; an error for a list or an object (unhashable)
//	x in undefined    false (Jinja iterates nothing)
//	x in null|number|boolean   an error
//	x not in y        not (x in y), keeping the error
//	not a             errors stay errors
//	a and b           a's error, or false when a is falsy, otherwise b
//	a or b            a's error, or true when a is truthy, otherwise b
//
// Three deliberate departures from Jinja, each a case where Jinja's
// answer comes from Python rather than from the data:
//
//   - A missing value equals nothing: undefined == undefined is false (Jinja
//     says true), so a skipped step never satisfies an equality; != stays
//     the negation of ==.
//   - Booleans are not numbers: true == 1 is false and true < 2 is an
//     error (Python says True == 1 and True < 2).
//   - Only numbers and strings are ordered: [1] < [2] is an error (Python
//     orders lists).
//
// Jinja would also read steps.x.items as the dict method items; here it is
// always the key "items".
//
// Truthy and Equal are the truth value and == of the table above over
// defined JSON values, in Go: the lowering folds literals with them, and
// a deterministic check's expect: (package shared/steprun), which uses
// this language, evaluates with them.
//
// # Lowering
//
// JSONata returns an expression that evaluates to true or false for every
// input and never raises: a Choice state cannot catch an error from its
// Condition. The JSONata operators cannot be used directly — comparing a
// string with a number raises T2009, ordering with null raises T2010, a
// path over a list maps over its items, a conditional without an else
// yields nothing — so each form guards with $type first:
//
//	x == "s"          x = 's'                (also numbers, booleans and non-empty lists)
//	x == none         $type(x) = 'null'
//	x == []           X = []                 (X: the exact value, see below)
//	x == y            X = Y
//	x != y            $not(x == y as above)
//	x > 0.8           $type(x) = 'number' ? x > 0.8 : false
//	x < y             ($a := x; $b := y; $type($a) = $type($b) and $type($a) in ['number', 'string'] ? $a < $b : false)
//	x in ["a", 1]     x in ['a', 1]          (null items become $type(x) = 'null', list items x = [...])
//	x in "text"       $type(x) = 'string' ? $contains('text', x) : false
//	"s" in c          ($c := c; $t := $type($c); $exists($c) ? ($t = 'array' ? 's' in $c : $t = 'string' ?
//	                   $contains($c, 's') : $t = 'object' ? 's' in $keys($c) : false) : false)
//	x in c            as above, with array membership by $map and deep equality
//	x (truthiness)    ($v := x; $type($v) = 'array' ? $count($v) > 0 : $v ? true : false)
//	x is defined      'k' in $keys(parent)   (with $type(parent) = 'object' where parent may be a list)
//	x is none         $type(x) = 'null'
//	not a             pushed down to the comparisons (De Morgan holds with errors as above)
//	a and b, a or b   JSONata and/or when neither side can error; otherwise a conditional chain
//	                  ($r := a; $r ? b : $r) in which an error is "nothing" until the top level
//	                  turns it into false
//
// Paths are rendered from the Scope root: $steps.triage.action, with
// backtick-quoted names where needed ($steps.`first-line-triage`.summary)
// and JSONata keywords always quoted. Root.Keyed says how many levels are
// known to be objects; below them each step is guarded,
// ($p := $steps.x.meta; $type($p) = 'object' ? $p.owner), so a list is
// never mapped over. The exact value X, needed where an empty list must
// not read as missing, is $exists($p.k) ? $p.k : 'k' in $keys($p) ? [].
// A key JSONata cannot quote — one holding a backtick, a control character
// or {% or %} — is rejected. String literals are single-quoted (readable
// inside the ASL's JSON) with ', \, control characters and a % next to a
// brace escaped as \u00XX. The lowering binds the locals $v, $c, $t, $p,
// $r, $a, $b and $e (a Scope root may not use them) and calls the built-in
// functions $type, $exists, $count, $keys, $contains, $map and $not, which
// the state machine must not shadow with variables of the same name.
//
// # Two engines
//
// The reference is the npm package jsonata@2.0.6, the version Step
// Functions runs; the local engine evaluates with
// github.com/blues/jsonata-go (JSONata 1.5.4). The emitted forms avoid
// what the two evaluate differently:
//
//   - jsonata-go returns nothing for a path that ends at an empty array,
//     hence the exact form above wherever [] and undefined differ.
//   - jsonata-go's $lookup returns null for a missing key and a null that
//     does not equal null; it is never used.
//   - $not(undefined) is undefined in jsonata 2.0.6 and true in jsonata-go;
//     $not is only applied to booleans.
//   - jsonata-go's "in" never finds null and its "and"/"or" evaluate both
//     sides; null membership uses $type, and every guard is a conditional.
//   - $map over a one-item array returns the bare item in 2.0.6 and a
//     one-item array in jsonata-go; only "true in $map(...)" is used.
//
// jsonata-go also reads a nil interface{} as "no value": the engine must
// bind JSON null inside $steps, $vars and $trigger as a nil *interface{}
// (jsonata-go's null), or "is none" and == none cannot see it. One
// difference is left: ordering strings that mix characters above U+FFFF
// with characters from U+E000 to U+FFFF, where JavaScript compares UTF-16
// code units and jsonata-go compares code points; the reference is what
// runs on AWS.
//
// The differential tests evaluate every form with both engines (the
// reference through testdata/jsonata-eval.mjs, one node process per table)
// and with an independent Go model of the rules above.
package when
