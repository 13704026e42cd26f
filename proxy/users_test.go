package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// userRoutes are the three chat routes with a credential for their own
// provider.
var userRoutes = []struct {
	name, path, header string
	body               func(text string) string
	provider           string
}{
	{"chat", "/v1/chat/completions", "Authorization: Bearer sk-proj-k",
		func(s string) string {
			return `{"model":"gpt-4o","messages":[{"role":"user","content":` + jsonString(s) + `}]}`
		}, "openai"},
	{"messages", "/v1/messages", "X-Api-Key: sk-ant-k",
		func(s string) string {
			return `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":` + jsonString(s) + `}]}`
		}, "anthropic"},
	{"responses", "/v1/responses", "Authorization: Bearer sk-proj-k",
		func(s string) string { return `{"model":"gpt-4o","input":` + jsonString(s) + `}` }, "openai"},
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestStoresNothingCreatesNothing: probe mode and Capture: off look the
// user and conversation up and create neither; a user that does not exist
// gets the question alone, without tools.
func TestStoresNothingCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, r := range userRoutes {
		for _, c := range []struct {
			name      string
			headers   []string
			wantUsers int
			wantConvs int
			wantUser  int64 // the frame's user; -1: no frame asked
		}{
			{"probe, new user", []string{HeaderMode + ": probe", HeaderUser + ": ghost"}, 0, 0, 0},
			{"probe, new user, named conversation", []string{HeaderMode + ": probe", HeaderUser + ": ghost", HeaderConversation + ": c1"}, 0, 0, 0},
			{"probe, key's user, new conversation", []string{HeaderMode + ": probe", HeaderConversation + ": c1"}, 0, 0, 1},
			{"capture off, new user", []string{HeaderCapture + ": off", HeaderUser + ": ghost"}, 0, 0, 0},
			{"capture and recall off, new user", []string{HeaderCapture + ": off", HeaderRecall + ": off", HeaderUser + ": ghost"}, 0, 0, -1},
			{"capture on creates both", []string{HeaderUser + ": newcomer", HeaderConversation + ": c1"}, 1, 1, 2},
		} {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				tp := newTestProxy(t)
				status, h, body := tp.post(r.path, r.body("what is my cat called?"), append([]string{r.header}, c.headers...)...)
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				tp.settle(1)
				users, convs := tp.dir.Made()
				if users != c.wantUsers || convs != c.wantConvs {
					t.Errorf("made %d users, %d conversations; want %d, %d", users, convs, c.wantUsers, c.wantConvs)
				}
				if c.wantConvs == 0 && h.Get(HeaderConvID) != "" {
					t.Errorf("a conversation id %q for a conversation not created", h.Get(HeaderConvID))
				}
				q := tp.mem.lastQuery
				switch {
				case c.wantUser < 0 && q.Live != "":
					t.Errorf("a frame was asked with recall off")
				case c.wantUser >= 0 && q.UserID != c.wantUser:
					t.Errorf("frame asked for user %d, want %d", q.UserID, c.wantUser)
				case c.wantUser == 0 && q.Tools:
					t.Errorf("memory tools offered to a user that does not exist")
				}
				if got := len(tp.mem.Stored()); c.wantUsers == 0 && got != 0 {
					t.Errorf("stored %d messages", got)
				}
			})
		}
	}
}

// TestUsersPerDayRefusal: past its new users of the day a key gets the
// dialect's 429 with Retry-After before anything is stored or forwarded;
// users it made already, and its own, still work.
func TestUsersPerDayRefusal(t *testing.T) {
	t.Parallel()
	for _, r := range userRoutes {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			tp.px.cfg.KeyUsersPerDay = 2
			for i, u := range []string{"u1", "u2"} {
				if status, _, body := tp.post(r.path, r.body("hi"), r.header, HeaderUser+": "+u); status != http.StatusOK {
					t.Fatalf("user %d: %d %s", i, status, body)
				}
			}
			tp.settle(2)
			forwarded := len(tp.received()[r.provider])
			stored := len(tp.mem.Stored())
			status, h, body := tp.post(r.path, r.body("hi"), r.header, HeaderUser+": u3")
			if status != http.StatusTooManyRequests {
				t.Fatalf("third new user: %d %s", status, body)
			}
			secs, err := strconv.Atoi(h.Get("Retry-After"))
			if err != nil || secs < 1 || secs > 86400 {
				t.Errorf("Retry-After %q, want seconds to UTC midnight", h.Get("Retry-After"))
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type, Code, Message string
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			wantType := "users"
			if r.name == "messages" {
				wantType = "rate_limit_error"
			}
			if e.Error.Type != wantType || !strings.Contains(e.Error.Message, "PERPETUITY_KEY_USERS_PER_DAY") {
				t.Errorf("refusal %s, want type %q naming the setting", body, wantType)
			}
			if r.name != "messages" && e.Error.Code != "rate_limit_exceeded" {
				t.Errorf("OpenAI code %q", e.Error.Code)
			}
			if n := len(tp.received()[r.provider]); n != forwarded {
				t.Errorf("the refused request was forwarded")
			}
			if n := len(tp.mem.Stored()); n != stored {
				t.Errorf("the refused request stored %d messages", n-stored)
			}
			for _, u := range []string{"u1", ""} {
				hs := []string{r.header}
				if u != "" {
					hs = append(hs, HeaderUser+": "+u)
				}
				if status, _, body := tp.post(r.path, r.body("again"), hs...); status != http.StatusOK {
					t.Errorf("user %q after the bound: %d %s", u, status, body)
				}
			}
		})
	}
}

// TestStorableRefusedBeforeAnything: text the database cannot hold is a
// 400 in the dialect, with nothing stored, created or forwarded.
func TestStorableRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	for _, r := range userRoutes {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			tp := newTestProxy(t)
			status, _, body := tp.post(r.path, r.body("a\x00b"), r.header, HeaderUser+": newcomer", HeaderConversation+": c1")
			if status != http.StatusBadRequest || !strings.Contains(body, "contains a NUL character (U+0000), which cannot be stored") {
				t.Fatalf("status %d: %s", status, body)
			}
			if r.name == "messages" && !strings.Contains(body, `"invalid_request_error"`) {
				t.Errorf("not Anthropic's invalid_request_error: %s", body)
			}
			users, convs := tp.dir.Made()
			if users+convs+len(tp.mem.Stored())+len(tp.received()) != 0 {
				t.Errorf("a refusal left %d users, %d conversations, %d messages, forwarded to %v", users, convs, len(tp.mem.Stored()), tp.received())
			}
		})
	}
}
