package toolloop

import (
	"encoding/json"
	"testing"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/proxy/wire/jsonx"
)

// wholeInstruct is chatLoop.instruct as it was written first: every
// message read, the instruction put after the leading system ones, the
// array written again. The byte splice must give the same body.
func wholeInstruct(o *jsonx.Object) {
	msgs := o.Array("messages")
	at, role := 0, "system"
	for at < len(msgs) {
		var m struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(msgs[at], &m) != nil || (m.Role != "system" && m.Role != "developer") {
			break
		}
		role = m.Role
		at++
	}
	ins, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{role, memory.ToolInstructions})
	msgs = append(msgs[:at], append([]json.RawMessage{ins}, msgs[at:]...)...)
	o.Set("messages", msgs)
}

// TestChatInstructSplice: the instruction lands where reading every
// message would put it, in the leading messages' role, whatever the array
// holds.
func TestChatInstructSplice(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]}`,
		`{"model":"m","messages":[{"role":"developer","content":"D"},{"role":"system","content":"S"},{"role":"user","content":"q"}],"n":1}`,
		`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"system","content":"late"}]}`,
		`{"model":"m","messages":[ {"role" : "system", "content":"S"} , {"role":"assistant","content":[{"type":"text","text":"a"}]} ]}`,
		`{"model":"m","messages":[{"role":"system","content":"S"}]}`,
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":["odd",{"role":"system"}]}`,
		`{"model":"m","messages":[{"role":1},{"role":"user"}]}`,
		`{"model":"m","messages":null}`,
		`{"model":"m","messages":"text"}`,
		`{"model":"m"}`,
	} {
		want, err := jsonx.ParseObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		wholeInstruct(want)
		got, _ := jsonx.ParseObject([]byte(body))
		chatLoop{}.instruct(got)
		if g, w := string(got.JSON()), string(want.JSON()); g != w {
			t.Errorf("%s:\n got %s\nwant %s", body, g, w)
		}
	}
}
