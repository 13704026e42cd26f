// Package locomo reads files in the schema of the LoCoMo long-term
// conversation benchmark (snap-research/LoCoMo) and turns each sample into
// importable conversations and scorable questions.
//
// Real LoCoMo files are untidy, and Load survives all of it rather than
// rejecting the file: evidence ids such as "D30:05", "D:11:26",
// "D8:6; D9:17", space-separated lists, a bare "D", ids of turns that do not
// exist (kept out of the question's evidence and counted in Dropped),
// questions without evidence, session_N_date_time keys without a session,
// sessions without a date (they take the previous session's time plus one
// day), image turns carried only as blip_caption (appended to the text as
// " [shares an image: <caption>]"), empty turns (skipped) and duplicated
// sample ids (made unique).
//
// Mapping: each sample is one memory user (named after sample_id), each
// session one conversation ("session_N"), speaker_b's turns are assistant
// turns and everyone else's user turns, and turn i of a session is dated at
// the session's time plus i minutes so that order is stable.
package locomo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/importer"
)

// Sample is one LoCoMo conversation between two speakers and its questions.
type Sample struct {
	ID                 string
	SpeakerA, SpeakerB string
	Sessions           []Session
	Questions          []Question
	turns              map[string][2]int // dia id -> session index, turn index
}

// Session is one conversation of a sample.
type Session struct {
	Key      string // "session_N" as written in the file
	N        int
	DateTime string // as written in the file
	At       time.Time
	Turns    []Turn
}

// Turn is one importable turn.
type Turn struct {
	ID      string // normalized dia id, "D<session>:<turn>"
	Speaker string
	Role    string // "user" or "assistant"
	Text    string // as imported: the turn's text, plus its image caption
	At      time.Time
}

// Question is one qa entry of a sample.
type Question struct {
	Index    int // position in the sample's qa list
	Text     string
	Category int
	// Evidence are the normalized ids of existing turns the answer rests on.
	Evidence []string
	// Dropped are evidence ids that name no importable turn.
	Dropped []string
}

// Turn returns the turn with a normalized dia id.
func (s *Sample) Turn(id string) (Turn, bool) {
	p, ok := s.turns[id]
	if !ok {
		return Turn{}, false
	}
	return s.Sessions[p[0]].Turns[p[1]], true
}

// Load reads a LoCoMo-schema file: a JSON list of samples (a single sample
// object is accepted too). Only a file that is not JSON, or whose samples are
// not objects, is an error.
func Load(r io.Reader) ([]Sample, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '{' {
		list = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("want a JSON list of LoCoMo samples: %w", err)
	}
	out := make([]Sample, 0, len(list))
	ids := map[string]int{}
	for i, one := range list {
		s, err := loadSample(one)
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", i, err)
		}
		if s.ID == "" {
			s.ID = fmt.Sprintf("sample-%d", i+1)
		}
		if n := ids[s.ID]; n > 0 {
			ids[s.ID]++
			s.ID = clip(fmt.Sprintf("%s#%d", s.ID, n+1), importer.MaxNameBytes)
		} else {
			ids[s.ID] = 1
		}
		out = append(out, s)
	}
	return out, nil
}

type wireSample struct {
	SampleID     json.RawMessage            `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []json.RawMessage          `json:"qa"`
}

type wireTurn struct {
	Speaker     string          `json:"speaker"`
	DiaID       string          `json:"dia_id"`
	Text        string          `json:"text"`
	BlipCaption json.RawMessage `json:"blip_caption"`
}

type wireQA struct {
	Question string          `json:"question"`
	Evidence json.RawMessage `json:"evidence"`
	Category json.RawMessage `json:"category"`
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

func loadSample(raw json.RawMessage) (Sample, error) {
	var w wireSample
	if err := json.Unmarshal(raw, &w); err != nil {
		return Sample{}, fmt.Errorf("not a LoCoMo sample object: %w", err)
	}
	s := Sample{ID: clip(clean(looseString(w.SampleID)), importer.MaxNameBytes), turns: map[string][2]int{}}
	s.SpeakerA = clip(clean(looseString(w.Conversation["speaker_a"])), importer.MaxNameBytes)
	s.SpeakerB = clip(clean(looseString(w.Conversation["speaker_b"])), importer.MaxNameBytes)

	type skey struct {
		n   int
		key string
	}
	var keys []skey
	for k := range w.Conversation {
		if m := sessionKey.FindStringSubmatch(k); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				keys = append(keys, skey{n, k})
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].n != keys[j].n {
			return keys[i].n < keys[j].n
		}
		return keys[i].key < keys[j].key
	})
	var prev time.Time
	for _, k := range keys {
		n := k.n
		var turns []json.RawMessage
		if json.Unmarshal(w.Conversation[k.key], &turns) != nil {
			continue // not a list: nothing importable
		}
		sess := Session{Key: k.key, N: n, DateTime: looseString(w.Conversation[k.key+"_date_time"])}
		at, ok := ParseDateTime(sess.DateTime)
		switch {
		case ok:
		case !prev.IsZero():
			at = prev.Add(24 * time.Hour)
		default:
			at = time.Date(2000, 1, 1, 12, 0, 0, 0, time.UTC)
		}
		sess.At, prev = at, at
		for i, raw := range turns {
			var t wireTurn
			if json.Unmarshal(raw, &t) != nil {
				continue // not a turn object
			}
			text := clean(t.Text)
			if c := clean(looseString(t.BlipCaption)); c != "" {
				text = strings.TrimSpace(text + " [shares an image: " + c + "]")
			}
			if strings.TrimSpace(text) == "" {
				continue
			}
			speaker := clip(clean(t.Speaker), importer.MaxNameBytes)
			if s.SpeakerA == "" && speaker != "" && speaker != s.SpeakerB {
				s.SpeakerA = speaker
			}
			role := "user"
			if speaker != "" && speaker == s.SpeakerB {
				role = "assistant"
			}
			id := fmt.Sprintf("D%d:%d", n, i+1)
			if ids := EvidenceIDs(t.DiaID); len(ids) == 1 {
				id = ids[0]
			}
			if _, dup := s.turns[id]; dup {
				id = fmt.Sprintf("D%d:%d", n, i+1)
				if _, dup := s.turns[id]; dup {
					continue // two turns claim one id: the first keeps it
				}
			}
			s.turns[id] = [2]int{len(s.Sessions), len(sess.Turns)}
			sess.Turns = append(sess.Turns, Turn{ID: id, Speaker: speaker, Role: role, Text: text,
				At: at.Add(time.Duration(len(sess.Turns)) * time.Minute)})
		}
		if len(sess.Turns) > 0 {
			s.Sessions = append(s.Sessions, sess)
		}
	}

	for i, q := range w.QA {
		var wq wireQA
		if json.Unmarshal(q, &wq) != nil || strings.TrimSpace(wq.Question) == "" {
			continue
		}
		qq := Question{Index: i, Text: clean(wq.Question), Category: looseInt(wq.Category)}
		seen := map[string]bool{}
		for _, id := range EvidenceIDs(evidenceStrings(wq.Evidence)...) {
			if seen[id] {
				continue
			}
			seen[id] = true
			if _, ok := s.turns[id]; ok {
				qq.Evidence = append(qq.Evidence, id)
			} else {
				qq.Dropped = append(qq.Dropped, id)
			}
		}
		s.Questions = append(s.Questions, qq)
	}
	return s, nil
}

// evidenceRef finds dia ids however they are written: "D1:3", "D30:05",
// "D:11:26", "D 4 : 2"; a bare "D" has no numbers and finds nothing.
var evidenceRef = regexp.MustCompile(`D\s*:?\s*(\d+)\s*:\s*(\d+)`)

// EvidenceIDs extracts every dia id from evidence strings, normalized to
// "D<session>:<turn>" without leading zeros, in order of appearance.
func EvidenceIDs(raw ...string) []string {
	var out []string
	for _, s := range raw {
		for _, m := range evidenceRef.FindAllStringSubmatch(s, -1) {
			a, err1 := strconv.Atoi(m[1])
			b, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, fmt.Sprintf("D%d:%d", a, b))
		}
	}
	return out
}

// evidenceStrings accepts a list of strings, a single string, or a list
// mixing strings with anything else (ignored).
func evidenceStrings(raw json.RawMessage) []string {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	var out []string
	for _, r := range list {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func looseString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func looseInt(raw json.RawMessage) int {
	s := strings.TrimSpace(looseString(raw))
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= -1e9 && f <= 1e9 {
		return int(f)
	}
	return 0
}

// dateLayouts are the ways LoCoMo writes session times ("1:56 pm on 8 May,
// 2023"); month names match case-insensitively, am/pm in either case.
var dateLayouts = []string{
	"3:04 pm on 2 January, 2006",
	"3:04 pm on 2 January 2006",
	"3:04 pm on 2 Jan, 2006",
	"3:04 pm on 2 Jan 2006",
	"3:04 pm, 2 January, 2006",
	"2 January, 2006",
	"2 January 2006",
	"January 2, 2006",
	time.RFC3339,
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// ParseDateTime reads a session_N_date_time value as UTC.
func ParseDateTime(s string) (time.Time, bool) {
	v := strings.Join(strings.Fields(strings.ToLower(s)), " ")
	if v == "" {
		return time.Time{}, false
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t.UTC(), true
		}
		if t, err := time.Parse(l, strings.ToUpper(v)); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// clean makes text storable: valid UTF-8 and no NUL characters.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimSpace(strings.ReplaceAll(s, "\x00", " "))
}

func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Conversations returns the sample as importable conversations, one per
// session, owned by the memory user named after the sample.
func (s *Sample) Conversations() []importer.Conversation {
	out := make([]importer.Conversation, 0, len(s.Sessions))
	for _, sess := range s.Sessions {
		c := importer.Conversation{
			ID:    sess.Key,
			Title: clip(clean(fmt.Sprintf("%s session %d, %s", s.ID, sess.N, sess.DateTime)), importer.MaxTitleBytes),
			User:  s.ID,
		}
		for _, t := range sess.Turns {
			c.Turns = append(c.Turns, importer.Turn{Role: t.Role, Speaker: t.Speaker, Text: t.Text, At: t.At})
		}
		out = append(out, c)
	}
	return out
}

// WriteJSONL writes conversations in the importer's JSONL format.
func WriteJSONL(w io.Writer, convs []importer.Conversation) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range convs {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}
