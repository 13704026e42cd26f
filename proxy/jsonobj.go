package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/perpetuity/perpetuity/proxy/sse"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// object is a JSON object whose keys keep their order, for editing a
// provider's body or event in place: the keys nobody touches come back as
// they came, in the same order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(b []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *object) get(k string) json.RawMessage { return o.vals[k] }

// has reports a key present with a value other than null.
func (o *object) has(k string) bool {
	v, ok := o.vals[k]
	return ok && !isNull(v)
}

func (o *object) setRaw(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// set encodes v without HTML escaping, as the providers do.
func (o *object) set(k string, v any) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		// Only values built here are set: strings, numbers, raw JSON and
		// slices of those, which always encode.
		panic(fmt.Sprintf("proxy: encode %s: %v", k, err))
	}
	o.setRaw(k, b)
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := jsonx.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		var v bytes.Buffer
		if len(o.vals[k]) == 0 {
			b.WriteString("null")
		} else if json.Compact(&v, o.vals[k]) == nil {
			b.Write(v.Bytes())
		} else {
			b.Write(o.vals[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// str reads a string member ("" when absent or not a string).
func (o *object) str(k string) string {
	var s string
	_ = json.Unmarshal(o.vals[k], &s)
	return s
}

// array reads an array member (nil when absent or not an array).
func (o *object) array(k string) []json.RawMessage {
	var a []json.RawMessage
	_ = json.Unmarshal(o.vals[k], &a)
	return a
}

// sumUsage adds two usage objects member by member: numbers add up, nested
// objects add up recursively, anything else takes b's value. Either may be
// empty. Both dialects' usage objects (and their details) sum this way.
func sumUsage(a, b json.RawMessage) json.RawMessage {
	if len(a) == 0 || isNull(a) {
		return b
	}
	if len(b) == 0 || isNull(b) {
		return a
	}
	oa, err1 := parseObject(a)
	ob, err2 := parseObject(b)
	if err1 != nil || err2 != nil {
		return b
	}
	for _, k := range ob.keys {
		va, vb := oa.vals[k], ob.vals[k]
		var na, nb json.Number
		switch {
		case json.Unmarshal(va, &na) == nil && json.Unmarshal(vb, &nb) == nil:
			x, e1 := na.Int64()
			y, e2 := nb.Int64()
			if e1 == nil && e2 == nil {
				oa.set(k, x+y)
				continue
			}
			oa.setRaw(k, vb)
		case len(bytes.TrimSpace(va)) > 0 && bytes.TrimSpace(va)[0] == '{' && len(bytes.TrimSpace(vb)) > 0 && bytes.TrimSpace(vb)[0] == '{':
			oa.setRaw(k, sumUsage(va, vb))
		default:
			oa.setRaw(k, vb)
		}
	}
	return oa.bytes()
}

// overlay applies b's members over a (message_delta's cumulative counts
// over message_start's).
func overlay(a, b json.RawMessage) json.RawMessage {
	if len(a) == 0 || isNull(a) {
		return b
	}
	if len(b) == 0 || isNull(b) {
		return a
	}
	oa, err1 := parseObject(a)
	ob, err2 := parseObject(b)
	if err1 != nil || err2 != nil {
		return b
	}
	for _, k := range ob.keys {
		if !isNull(ob.vals[k]) {
			oa.setRaw(k, ob.vals[k])
		}
	}
	return oa.bytes()
}

// newEvent formats an event the proxy wrote itself.
func newEvent(name string, data []byte) sse.Event {
	ev := sse.Event{Event: name, Data: data}
	ev.Raw = sse.Format(ev)
	return ev
}

// rewriteEvent re-encodes ev's data after edit changed it; an event whose
// data is not an object comes back as it was.
func rewriteEvent(ev sse.Event, edit func(o *object)) sse.Event {
	o, err := parseObject(bytes.TrimSpace(ev.Data))
	if err != nil {
		return ev
	}
	edit(o)
	return newEvent(ev.Event, o.bytes())
}
