package llmoutput

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DeriveSchema returns the JSON Schema (draft-07) of the JSON encoding of
// the Go type T, as encoding/json would write it:
//
//   - fields named by their json tag; "-" and unexported fields skipped;
//     embedded structs without a tag inlined;
//   - a field is required unless it is a pointer or tagged omitempty or
//     omitzero; objects are closed (additionalProperties false);
//   - the tag desc:"…" sets a field's description; enum:"a,b,c" lists the
//     values a string or integer field may take;
//   - maps become objects with additionalProperties; []byte a base64
//     string; time.Time a date-time string; interfaces, json.RawMessage
//     and other json.Marshalers any value; encoding.TextMarshalers strings.
//
// Recursive types, channels, functions and complex numbers are errors.
func DeriveSchema[T any](title, description string) (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	d := deriver{inProgress: map[reflect.Type]bool{}}
	body, err := d.schemaOf(t, "")
	if err != nil {
		return nil, fmt.Errorf("derive schema of %v: %w", t, err)
	}
	root := value{kind: kindObject, members: []member{
		{"$schema", str("http://json-schema.org/draft-07/schema#")},
	}}
	if title != "" {
		root.members = append(root.members, member{"title", str(title)})
	}
	if description != "" {
		root.members = append(root.members, member{"description", str(description)})
	}
	for _, m := range body.members {
		if m.key == "description" && description != "" {
			continue
		}
		root.members = append(root.members, m)
	}
	return json.RawMessage(appendJSON(nil, &root)), nil
}

func str(s string) value { return value{kind: kindString, str: s} }

type deriver struct {
	inProgress map[reflect.Type]bool
}

func (d *deriver) schemaOf(t reflect.Type, path string) (value, error) {
	typeTime := reflect.TypeFor[time.Time]()
	typeRawMessage := reflect.TypeFor[json.RawMessage]()
	typeJSONMarshaler := reflect.TypeFor[json.Marshaler]()
	typeTextMarshaler := reflect.TypeFor[encoding.TextMarshaler]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	typ := func(name string) value {
		return value{kind: kindObject, members: []member{{"type", str(name)}}}
	}
	switch {
	case t == typeTime:
		return value{kind: kindObject, members: []member{{"type", str("string")}, {"format", str("date-time")}}}, nil
	case t == typeRawMessage:
		return value{kind: kindObject}, nil
	case t.Kind() != reflect.Interface && (t.Implements(typeJSONMarshaler) || reflect.PointerTo(t).Implements(typeJSONMarshaler)):
		return value{kind: kindObject}, nil
	case t.Kind() != reflect.Interface && (t.Implements(typeTextMarshaler) || reflect.PointerTo(t).Implements(typeTextMarshaler)):
		return typ("string"), nil
	}
	switch t.Kind() {
	case reflect.String:
		return typ("string"), nil
	case reflect.Bool:
		return typ("boolean"), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return typ("integer"), nil
	case reflect.Float32, reflect.Float64:
		return typ("number"), nil
	case reflect.Interface:
		return value{kind: kindObject}, nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return value{kind: kindObject, members: []member{{"type", str("string")}, {"contentEncoding", str("base64")}}}, nil
		}
		items, err := d.schemaOf(t.Elem(), path+"[]")
		if err != nil {
			return value{}, err
		}
		s := typ("array")
		s.members = append(s.members, member{"items", items})
		if t.Kind() == reflect.Array {
			n := value{kind: kindNumber, str: strconv.Itoa(t.Len())}
			s.members = append(s.members, member{"minItems", n}, member{"maxItems", n})
		}
		return s, nil
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			if !t.Key().Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
				return value{}, fmt.Errorf("%s: map key type %v has no JSON form", orRoot(path), t.Key())
			}
		}
		elem, err := d.schemaOf(t.Elem(), path+"{}")
		if err != nil {
			return value{}, err
		}
		s := typ("object")
		s.members = append(s.members, member{"additionalProperties", elem})
		return s, nil
	case reflect.Struct:
		return d.structSchema(t, path)
	}
	return value{}, fmt.Errorf("%s: type %v has no JSON form", orRoot(path), t)
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func (d *deriver) structSchema(t reflect.Type, path string) (value, error) {
	if d.inProgress[t] {
		return value{}, fmt.Errorf("%s: recursive type %v is not supported", orRoot(path), t)
	}
	d.inProgress[t] = true
	defer delete(d.inProgress, t)
	props := value{kind: kindObject}
	required := value{kind: kindArray}
	if err := d.addFields(t, path, &props, &required); err != nil {
		return value{}, err
	}
	s := value{kind: kindObject, members: []member{{"type", str("object")}, {"properties", props}}}
	if len(required.items) > 0 {
		s.members = append(s.members, member{"required", required})
	}
	s.members = append(s.members, member{"additionalProperties", value{kind: kindBool, str: "false"}})
	return s, nil
}

func (d *deriver) addFields(t reflect.Type, path string, props, required *value) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if d.inProgress[et] {
					return fmt.Errorf("%s: recursive type %v is not supported", orRoot(path), et)
				}
				if err := d.addFields(et, path, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if props.get(name) != nil {
			continue // a shallower field of the same name wins
		}
		fpath := joinPath(path, name)
		s, err := d.schemaOf(ft, fpath)
		if err != nil {
			return err
		}
		if strings.Contains(","+opts+",", ",string,") {
			s = value{kind: kindObject, members: []member{{"type", str("string")}}}
		}
		if e := f.Tag.Get("enum"); e != "" {
			ev, err := enumValues(e, s, fpath)
			if err != nil {
				return err
			}
			s.members = append(s.members, member{"enum", ev})
		}
		if desc := f.Tag.Get("desc"); desc != "" {
			s.members = append([]member{{"description", str(desc)}}, s.members...)
		}
		props.members = append(props.members, member{name, s})
		optional := ft.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !optional {
			required.items = append(required.items, str(name))
		}
	}
	return nil
}

// enumValues reads an enum tag for a string or integer schema.
func enumValues(tag string, s value, path string) (value, error) {
	t := s.get("type")
	out := value{kind: kindArray}
	for _, e := range strings.Split(tag, ",") {
		e = strings.TrimSpace(e)
		switch {
		case t != nil && t.str == "string":
			out.items = append(out.items, str(e))
		case t != nil && t.str == "integer":
			if _, err := strconv.ParseInt(e, 10, 64); err != nil {
				return value{}, fmt.Errorf("%s: enum value %q is not an integer", path, e)
			}
			out.items = append(out.items, value{kind: kindNumber, str: e})
		default:
			return value{}, fmt.Errorf("%s: enum tags apply to string and integer fields", path)
		}
	}
	return out, nil
}
