package engine

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"iter"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	jsonata "github.com/blues/jsonata-go"
	"github.com/blues/jsonata-go/jtypes"

	"github.com/stepline/stepline/shared/asl"
)

// expr is one compiled JSONata string. The expression is wrapped in a block
// that binds the state machine variables it references, and $states, from
// the evaluation's input document, and evaluations are serialized
// (evalMu), so it is safe for concurrent use.
type expr struct {
	src   string // the expression, without {% %}
	field string // where it sits, e.g. "Arguments/Payload/run"
	names []string
	code  *exprCode
	// path is set when the expression is a plain path, $name or
	// $name.field.field (the most common kind in compiled machines): it
	// is then looked up directly as long as every step meets an object.
	path []string
}

// exprCode is what the expressions of one definition with the same body
// and the same bound variables share: a compiled machine repeats the same
// strings in every step ($states.result.Payload, $run, the outcome
// conditions), so each distinct one is parsed once per definition (a
// 100-step pipeline has about 1,400 JSONata strings, 330 of them
// distinct). The wrapped program of a plain path is compiled only when a
// lookup meets an array, which few runs do.
type exprCode struct {
	names []string // the bound variables: the wrapped program binds each
	exts  map[string]jsonata.Extension
	path  []string
	obj   []objVar  // an object of variables (shapes.go)
	plus  *pathPlus // a plain path plus a whole number (shapes.go)

	// body is the expression; its own compile was deferred
	// (compileChecked) when check is set: program compiles it first.
	body  string
	check bool

	once sync.Once
	prog *jsonata.Expr
	err  error
}

// program returns the compiled wrapped program, compiling it on first use.
func (c *exprCode) program() (*jsonata.Expr, error) {
	c.once.Do(func() {
		if c.check {
			if _, err := jsonata.Compile(c.body); err != nil {
				c.err = fmt.Errorf("JSONata expression %q does not compile: %v", c.body, err)
				return
			}
		}
		c.prog, c.err = jsonata.Compile(wrapped(c.body, c.names))
		if c.err == nil && len(c.exts) > 0 {
			if err := c.prog.RegisterExts(c.exts); err != nil {
				c.err = fmt.Errorf("register functions: %v", err)
			}
		}
	})
	return c.prog, c.err
}

// exprCache holds the exprCode of one definition's compile by body and
// bound names; a nil exprCache shares nothing.
type exprCache map[exprKey]*exprCode

type exprKey struct{ body, names string }

// evalMu serializes JSONata evaluations in the process. blues/jsonata-go
// keeps its functions in package-level values and sets the name and the
// context of each one on every call, so concurrent evaluations (of
// different runs) would race, and a function could see another
// evaluation's context. Evaluations are short, and plain paths do not
// take it.
var evalMu sync.Mutex

// plainPath returns the variable's name and the fields of body when it
// is a plain path, $name or $name.field.field (what the regexp
// ^\s*\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*$
// matches, read without the regexp engine); nil otherwise.
func plainPath(body string) []string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
	i, j := 0, len(body)
	for i < j && isSpace(body[i]) {
		i++
	}
	for j > i && isSpace(body[j-1]) {
		j--
	}
	s := body[i:j]
	if len(s) < 2 || s[0] != '$' {
		return nil
	}
	for k := 1; ; {
		if k >= len(s) || !isNameStart(s[k]) {
			return nil
		}
		for k < len(s) && (isNameStart(s[k]) || '0' <= s[k] && s[k] <= '9') {
			k++
		}
		if k == len(s) {
			return strings.Split(s[1:], ".")
		}
		if s[k] != '.' {
			return nil
		}
		k++
	}
}

// varRefs yields the name of every variable reference in src, in order:
// each "$" followed by a letter or "_" and then letters, digits and "_",
// as many as follow (the matches of \$([A-Za-z_][A-Za-z0-9_]*), scanned
// without the regexp engine).
func varRefs(src string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(src); i++ {
			if src[i] != '$' || i+1 >= len(src) || !isNameStart(src[i+1]) {
				continue
			}
			j := i + 2
			for j < len(src) && (isNameStart(src[j]) || '0' <= src[j] && src[j] <= '9') {
				j++
			}
			if !yield(src[i+1 : j]) {
				return
			}
			i = j - 1
		}
	}
}

func isNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// compileExpr compiles the body of a JSONata string. visible lists the
// variables the state's scope can reference.
func compileExpr(body, field string, visible map[string]bool) (*expr, error) {
	return exprCache(nil).compile(body, field, visible)
}

// compile is compileExpr sharing the compiled code of an earlier
// expression with the same body and bound names.
func (c exprCache) compile(body, field string, visible map[string]bool) (*expr, error) {
	return c.compileChecking(body, field, binding{visible: visible}, true)
}

// binding is what an expression of a scope may bind: the variables
// visible there, and, while a definition compiles, what was found of
// each body already met in the scope (a 100-step machine repeats its
// 330 distinct bodies about 1,400 times, most in the same scope).
type binding struct {
	visible map[string]bool
	seen    map[string]bound // nil: nothing is kept
}

// bound is what boundNames found of a body in a scope.
type bound struct {
	names []string // shared, never changed
	key   exprKey
}

// boundNames returns the variables body references that the scope binds
// ($states always), each once, sorted, and the exprCache key of body
// with them.
func (b binding) boundNames(body string) bound {
	if x, ok := b.seen[body]; ok {
		return x
	}
	var names []string
	for n := range varRefs(body) {
		if slices.Contains(names, n) || (n != "states" && !b.visible[n]) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	x := bound{names: names, key: exprKey{body: body, names: strings.Join(names, " ")}}
	if b.seen != nil {
		b.seen[body] = x
	}
	return x
}

// compileChecking is compile; check false defers the body's own compile
// to its program's first compile (newExprCode).
func (c exprCache) compileChecking(body, field string, b binding, check bool) (*expr, error) {
	e := new(expr)
	if err := c.compileInto(e, body, field, b, check); err != nil {
		return nil, err
	}
	return e, nil
}

// compileInto is compileChecking setting *dst.
func (c exprCache) compileInto(dst *expr, body, field string, b binding, check bool) error {
	bn := b.boundNames(body)
	names, key := bn.names, bn.key
	code := c[key]
	if code == nil {
		var err error
		if code, err = newExprCode(body, names, check); err != nil {
			return fmt.Errorf("%s: JSONata expression %q does not compile: %v", field, body, err)
		}
		if c != nil {
			c[key] = code
		}
	}
	*dst = expr{src: body, field: field, names: names, code: code, path: code.path}
	return nil
}

// newExprCode checks that body compiles on its own (so that the block
// around it cannot make a broken expression whole) and prepares its
// wrapped program, compiled at its first evaluation, or never for a plain
// path. check false leaves the body's own compile to the program's first
// compile, before the wrapped program's.
func newExprCode(body string, names []string, check bool) (*exprCode, error) {
	if check {
		if _, err := jsonata.Compile(body); err != nil {
			return nil, err
		}
	}
	code := &exprCode{names: names, body: body, check: !check}
	// Bind only the extra functions the expression calls: every binding
	// costs on each evaluation.
	// (What strings.Contains(body, "$"+name) finds for each name, read
	// at each "$" of body.)
	for rest := body; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		if rest == "" || !strings.ContainsRune(sfnInitials, rune(rest[0])) {
			continue
		}
		for name, ext := range sfnFunctions {
			if strings.HasPrefix(rest, name) {
				if code.exts == nil {
					code.exts = map[string]jsonata.Extension{}
				}
				code.exts[name] = ext
			}
		}
	}
	if path := plainPath(body); path != nil && len(code.exts) == 0 && slices.Contains(names, path[0]) {
		code.path = path
		return code, nil
	}
	if len(code.exts) == 0 {
		code.obj, code.plus = objectOfVars(body, names), plusWhole(body, names)
	}
	// The wrapped program is compiled at the first evaluation (program):
	// a definition's compile has checked the body, which the wrapper only
	// puts in parentheses after the bindings, and most states a
	// definition holds (catchers, failure paths, a rerun's Choice) are
	// never entered by a run.
	return code, nil
}

// wrapped is the program an expression's code compiles: body in a block
// that first binds each of names, from the evaluation's input document.
func wrapped(body string, names []string) string {
	var b strings.Builder
	b.WriteString("(")
	for _, n := range names {
		b.WriteString("$" + n + " := $.`" + n + "`; ")
	}
	b.WriteString("(\n")
	b.WriteString(body)
	b.WriteString("\n))")
	return b.String()
}

// lookup evaluates a plain path without JSONata. ok is false when the
// path meets an array on the way (JSONata maps paths over arrays):
// JSONata evaluates it then. A missing name or field is undefined (v nil,
// ok true, defined false); null is a value (defined), and a field of null
// or of any other scalar is undefined. A path that ends at an array reads
// the array as it is, an empty one too. All as in jsonata 2.0.6, which
// Step Functions runs: blues/jsonata-go reads null and a path ending at
// an empty array as undefined.
func (e *expr) lookup(env *evalEnv) (v any, defined, ok bool) {
	return lookupPath(e.path, env)
}

// lookupPath is expr.lookup for a path of a variable's name and fields.
func lookupPath(path []string, env *evalEnv) (v any, defined, ok bool) {
	name := path[0]
	if name == "states" {
		v = env.states
	} else if env.vars == nil {
		return nil, false, true
	} else if v, defined = env.vars.lookupVar(name); !defined {
		return nil, false, true
	}
	for _, f := range path[1:] {
		switch x := v.(type) {
		case map[string]any:
			if v, defined = x[f]; !defined {
				return nil, false, true
			}
		case []any:
			return nil, false, false
		default:
			// A field of a scalar is undefined.
			return nil, false, true
		}
	}
	return v, true, true
}

// scopeVars looks up variables visible to a state.
type scopeVars interface {
	lookupVar(name string) (any, bool)
}

// evalEnv is what an evaluation sees: $states and the variables.
type evalEnv struct {
	states map[string]any
	vars   scopeVars
}

// eval evaluates e. An undefined result is an error, as in Step Functions.
func (e *expr) eval(env *evalEnv) (any, error) {
	v, err := e.evalRaw(env)
	if err != nil {
		return nil, err
	}
	v, err = normalize(v)
	if err != nil {
		return nil, queryError("The JSONata expression '%s' specified for the field '%s' returned %v", e.src, e.field, err)
	}
	return v, nil
}

// evalRaw evaluates e, by lookup when it is a plain path, without
// normalizing the result.
func (e *expr) evalRaw(env *evalEnv) (any, error) {
	if e.path != nil {
		if v, defined, ok := e.lookup(env); ok {
			if !defined {
				return nil, e.undefined()
			}
			return v, nil
		}
	}
	if e.code != nil && (e.code.obj != nil || e.code.plus != nil) {
		if v, ok := e.evalShape(env); ok {
			return v, nil
		}
	}
	doc := make(map[string]any, len(e.names))
	for _, n := range e.names {
		if n == "states" {
			doc[n] = jsonataValue(env.states)
			continue
		}
		if env.vars != nil {
			if v, ok := env.vars.lookupVar(n); ok {
				doc[n] = jsonataValue(v)
			}
		}
	}
	v, err := e.evalLocked(doc)
	if errors.Is(err, jsonata.ErrUndefined) {
		return nil, e.undefined()
	}
	if err != nil {
		return nil, queryError("The JSONata expression '%s' specified for the field '%s' failed: %v", e.src, e.field, err)
	}
	return v, nil
}

// jsonNull is how blues/jsonata-go holds JSON null: a nil *interface{}
// (what its own null literal evaluates to). A nil interface value, which
// encoding/json decodes null to, is undefined there, so a variable or a
// field holding null would read as missing, unlike in jsonata 2.0.6 (Step
// Functions), where $x bound to null is null and $exists($x) is true.
var jsonNull = (*any)(nil)

// jsonataValue returns v with every JSON null (a nil interface value)
// replaced by jsonNull, for evaluation by blues/jsonata-go. Values are
// never modified in place: a map or slice that holds a null is copied
// (and its parents), one that holds none is returned as it is, so a value
// without nulls costs a walk and no allocation.
func jsonataValue(v any) any {
	if v == nil {
		return jsonNull
	}
	out, _ := withNulls(v)
	return out
}

// withNulls is jsonataValue for a non-nil value; changed reports whether
// the result is a copy.
func withNulls(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			var n any
			changed := false
			if e == nil {
				n, changed = jsonNull, true
			} else {
				n, changed = withNulls(e)
			}
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			out[k] = n
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			var n any
			changed := false
			if e == nil {
				n, changed = jsonNull, true
			} else {
				n, changed = withNulls(e)
			}
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), x...)
			}
			out[i] = n
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
}

func (e *expr) evalLocked(doc map[string]any) (any, error) {
	prog, err := e.code.program()
	if err != nil {
		return nil, err
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	return prog.Eval(doc)
}

func (e *expr) undefined() error {
	return queryError("The JSONata expression '%s' specified for the field '%s' returned nothing (undefined).", e.src, e.field)
}

// normalize turns an evaluation result into plain JSON values (maps,
// slices, float64, string, bool, nil), rejecting what JSON cannot hold. A
// result that is plain already, as one that only selects from the input,
// is returned as is: values are never modified in place, so sharing them
// is safe.
func normalize(v any) (any, error) {
	if isPlain(v) {
		return v, nil
	}
	return convert(v)
}

// isPlain reports whether v holds plain JSON values only.
func isPlain(v any) bool {
	return everyLeaf(v, func(l any) bool {
		switch x := l.(type) {
		case nil, string, bool:
			return true
		case float64:
			return !math.IsNaN(x) && !math.IsInf(x, 0)
		}
		return false
	})
}

// everyLeaf reports whether leaf holds for every value in v that is not
// a map[string]any or an []any, walking those.
func everyLeaf(v any, leaf func(any) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if !everyLeaf(e, leaf) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !everyLeaf(e, leaf) {
				return false
			}
		}
		return true
	}
	return leaf(v)
}

// convert is normalize for a value that is not plain: a copy made of
// plain values.
func convert(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("a non-finite number")
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float32:
		return float64(x), nil
	case *any:
		// blues/jsonata-go's null, nested in a result.
		if x == nil {
			return nil, nil
		}
		return normalize(*x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	if _, ok := v.(jtypes.Callable); ok {
		return nil, errors.New("a function, which is not JSON")
	}
	// Any other Go type survives only if it round-trips through JSON.
	out, err := plainJSON(v)
	if err != nil {
		return nil, fmt.Errorf("a value of type %T, which is not JSON", v)
	}
	return out, nil
}

// tmpl is a compiled field value: a JSON value in which JSONata strings,
// also nested in objects and arrays, are evaluated.
type tmpl struct {
	static bool // no expressions inside: value is lit
	lit    any
	expr   *expr
	keys   []string
	fields []*tmpl
	items  []*tmpl
	isObj  bool
	isArr  bool
}

func compileTmpl(v any, field string, visible map[string]bool) (*tmpl, error) {
	return exprCache(nil).tmpl(v, field, visible)
}

// tmpl is compileTmpl sharing compiled expressions through c.
func (c exprCache) tmpl(v any, field string, visible map[string]bool) (*tmpl, error) {
	return c.tmplChecking(v, field, binding{visible: visible}, true)
}

// tmplChecking is tmpl; check false defers each body's own compile
// (compileChecking).
func (c exprCache) tmplChecking(v any, field string, b binding, check bool) (*tmpl, error) {
	switch x := v.(type) {
	case string:
		if body, ok := asl.ExprBody(x); ok {
			// The node and its expression in one allocation.
			te := &struct {
				t tmpl
				e expr
			}{}
			if err := c.compileInto(&te.e, body, field, b, check); err != nil {
				return nil, err
			}
			te.t.expr = &te.e
			return &te.t, nil
		}
		return &tmpl{static: true, lit: x}, nil
	case map[string]any:
		if plainStatic(x) {
			return &tmpl{static: true, lit: x}, nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t := &tmpl{isObj: true, static: true, keys: keys, fields: make([]*tmpl, 0, len(keys))}
		for _, k := range keys {
			f, err := c.tmplChecking(x[k], field+"/"+k, b, check)
			if err != nil {
				return nil, err
			}
			t.fields = append(t.fields, f)
			t.static = t.static && f.static
		}
		if t.static {
			t.lit = x
		}
		return t, nil
	case []any:
		if plainStatic(x) {
			return &tmpl{static: true, lit: x}, nil
		}
		t := &tmpl{isArr: true, static: true}
		for i, e := range x {
			f, err := c.tmplChecking(e, field+"["+strconv.Itoa(i)+"]", b, check)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, f)
			t.static = t.static && f.static
		}
		if t.static {
			t.lit = x
		}
		return t, nil
	}
	// Values built in Go (structs, typed maps) are brought to plain JSON.
	n, err := plainJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", field, err)
	}
	switch n.(type) {
	case map[string]any, []any:
		return c.tmplChecking(n, field, b, check)
	}
	return &tmpl{static: true, lit: n}, nil
}

// plainStatic reports whether v is plain JSON (nil, bool, float64,
// string, map[string]any, []any) holding no JSONata string: what tmpl
// would compile, node by node, to a static value equal to v itself.
func plainStatic(v any) bool {
	return everyLeaf(v, func(l any) bool {
		switch x := l.(type) {
		case nil, bool, float64:
			return true
		case string:
			_, ok := asl.ExprBody(x)
			return !ok
		}
		return false
	})
}

// plainJSON converts any Go value to plain JSON values through encoding/json.
func plainJSON(v any) (any, error) {
	switch v.(type) {
	case nil, bool, float64, string, map[string]any, []any:
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func (t *tmpl) eval(env *evalEnv) (any, error) {
	if t.static {
		return t.lit, nil
	}
	if t.expr != nil {
		return t.expr.eval(env)
	}
	if t.isObj {
		out := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			v, err := t.fields[i].eval(env)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	out := make([]any, len(t.items))
	for i, it := range t.items {
		v, err := it.eval(env)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// The functions Step Functions adds to JSONata. $uuid uses crypto/rand.
var sfnFunctions = map[string]jsonata.Extension{
	"partition": {Func: sfnPartition},
	"range":     {Func: sfnRange},
	"hash":      {Func: sfnHash},
	"uuid":      {Func: sfnUUID},
	"parse":     {Func: sfnParse},
}

// sfnInitials holds the first letter of each of sfnFunctions' names
// (TestSFNInitials).
const sfnInitials = "hpru"

func sfnPartition(arr any, size any) (any, error) {
	items, ok := arr.([]any)
	if !ok {
		items = []any{arr}
	}
	n, ok := asInt(size)
	if !ok || n < 1 {
		return nil, errors.New("$partition: size must be a positive integer")
	}
	out := []any{}
	for i := 0; i < len(items); i += n {
		end := min(i+n, len(items))
		out = append(out, append([]any(nil), items[i:end]...))
	}
	return out, nil
}

func sfnRange(start, end, step any) (any, error) {
	s, ok1 := asInt(start)
	e, ok2 := asInt(end)
	st, ok3 := asInt(step)
	if !ok1 || !ok2 || !ok3 || st == 0 {
		return nil, errors.New("$range: start, end and a non-zero step must be integers")
	}
	out := []any{}
	for i := s; (st > 0 && i <= e) || (st < 0 && i >= e); i += st {
		out = append(out, float64(i))
		if len(out) > 1000 {
			return nil, errors.New("$range: more than 1000 items")
		}
	}
	return out, nil
}

func sfnHash(data any, algorithm any) (any, error) {
	s, ok := data.(string)
	if !ok {
		return nil, errors.New("$hash: data must be a string")
	}
	alg, _ := algorithm.(string)
	var h hash.Hash
	switch alg {
	case "MD5":
		h = md5.New()
	case "SHA-1":
		h = sha1.New()
	case "SHA-256":
		h = sha256.New()
	case "SHA-384":
		h = sha512.New384()
	case "SHA-512":
		h = sha512.New()
	default:
		return nil, fmt.Errorf("$hash: unknown algorithm %q", alg)
	}
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sfnUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

func sfnParse(s any) (any, error) {
	str, ok := s.(string)
	if !ok {
		return nil, errors.New("$parse: argument must be a string")
	}
	var v any
	if err := json.Unmarshal([]byte(str), &v); err != nil {
		return nil, fmt.Errorf("$parse: %v", err)
	}
	return v, nil
}

func asInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok {
		if i, isInt := v.(int); isInt {
			return i, true
		}
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}
