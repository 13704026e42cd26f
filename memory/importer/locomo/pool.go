package locomo

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perpetuity/perpetuity/memory/importer"
)

// Distractors for a pooled evaluation (eval locomo --pool): memory users
// whose memory is a copy of another sample's conversation, so the real
// samples' questions are asked from a tenant the size of a real deployment
// while their answers stay where they were.
//
// A copy must not read as the sample it came from, or the pool would hold
// hundreds of Carolines: the two speakers get fake names, replaced in the
// speaker fields and wherever the original name stands as a word in the
// text (case as written, or all capitals; nicknames such as "Mel" stay), and
// every session moves back by a whole number of days. Both choices come from
// a hash of (source sample id, copy number), so the same file and pool size
// give byte-identical distractors.

// fakeNames are the names distractor speakers are given; names that are a
// speaker of the file are left out so that no copy borrows a real one.
var fakeNames = [...]string{
	"Aaron", "Abigail", "Adrian", "Agnes", "Alan", "Alice", "Amara", "Ambrose", "Anika", "Arthur",
	"Astrid", "Barnaby", "Beatrix", "Bernard", "Bianca", "Boris", "Bridget", "Callum", "Camille", "Casper",
	"Cecily", "Cedric", "Clara", "Clement", "Cosima", "Damian", "Daphne", "Desmond", "Dora", "Edgar",
	"Edith", "Elias", "Elodie", "Emeric", "Enid", "Ezra", "Fabian", "Felicity", "Florian", "Freya",
	"Gareth", "Greta", "Gideon", "Gwendolyn", "Hamish", "Harriet", "Henrik", "Hilda", "Horace", "Ida",
	"Ignatius", "Imogen", "Ingrid", "Isidore", "Ivo", "Jasper", "Juniper", "Kasimir", "Keziah", "Lazlo",
	"Leopold", "Linnea", "Lorcan", "Lucinda", "Magnus", "Marisol", "Matthias", "Mirabel", "Montague", "Nadia",
	"Niamh", "Nikolai", "Odette", "Oswin", "Ottilie", "Pascal", "Rowena", "Philippa", "Quentin", "Rosalind",
	"Rufus", "Saoirse", "Seraphina", "Silas", "Solveig", "Tobias", "Thea", "Ulric", "Ursula", "Valentin",
	"Vesna", "Wilfred", "Winifred", "Xavier", "Yara", "Yusuf", "Zelda", "Zoltan", "Leocadia", "Bartholomew",
}

// maxShiftDays bounds how far back a copy's sessions move: up to ten years,
// at least a month, so no copy shares its source's dates.
const (
	minShiftDays = 30
	maxShiftDays = 3650
)

// Pool makes distractor users from a file's samples.
type Pool struct {
	sources []Sample
	names   []string
}

// NewPool makes distractors from the samples of file after the first real
// ones (the real samples are those asked): a real sample's distractors are
// other samples' conversations. When every sample is real, every sample is
// copied (each is then a distractor for the others).
func NewPool(file []Sample, real int) Pool {
	src := file
	if real < len(file) {
		src = file[real:]
	}
	taken := map[string]bool{}
	for i := range file {
		taken[strings.ToLower(file[i].SpeakerA)] = true
		taken[strings.ToLower(file[i].SpeakerB)] = true
		for _, s := range file[i].Sessions {
			for _, t := range s.Turns {
				taken[strings.ToLower(t.Speaker)] = true
			}
		}
	}
	var names []string
	for _, n := range fakeNames {
		if !taken[strings.ToLower(n)] {
			names = append(names, n)
		}
	}
	return Pool{sources: src, names: names}
}

// Distractor is one distractor memory user.
type Distractor struct {
	User      string // memory user name
	Source    string // the sample copied
	Copy      int    // which copy of Source this is, from 0
	Names     map[string]string
	ShiftDays int // how many days the sessions moved back
	// Conversations are the copy's sessions as importable conversations.
	Conversations []importer.Conversation
}

// Turns counts the distractor's turns.
func (d *Distractor) Turns() int {
	n := 0
	for _, c := range d.Conversations {
		n += len(c.Turns)
	}
	return n
}

// Sources is how many samples the pool copies.
func (p Pool) Sources() int { return len(p.sources) }

// Turns counts the turns of the k-th distractor without making it.
func (p Pool) Turns(k int) int {
	n := 0
	for _, s := range p.sources[k%len(p.sources)].Sessions {
		n += len(s.Turns)
	}
	return n
}

// Distractor returns the k-th distractor user (k from 0): a copy of source
// k mod Sources, copy number k div Sources.
func (p Pool) Distractor(k int) Distractor {
	src := &p.sources[k%len(p.sources)]
	d := Distractor{User: fmt.Sprintf("pool-%04d", k+1), Source: src.ID, Copy: k / len(p.sources)}
	// SHA-256, not a short hash: copy numbers differ in one byte, and the
	// three choices below each need bits that change with it.
	h := sha256.Sum256([]byte(src.ID + "\x00" + strconv.Itoa(d.Copy)))
	d.Names = p.rename(src, binary.BigEndian.Uint64(h[0:8]), binary.BigEndian.Uint64(h[8:16]))
	d.ShiftDays = minShiftDays + int(binary.BigEndian.Uint64(h[16:24])%uint64(maxShiftDays-minShiftDays))
	shift := -time.Duration(d.ShiftDays) * 24 * time.Hour
	re := namePattern(d.Names)
	for _, sess := range src.Sessions {
		at := sess.At.Add(shift)
		c := importer.Conversation{
			ID:    sess.Key,
			Title: clip(fmt.Sprintf("%s session %d, %s", d.User, sess.N, at.Format("3:04 pm on 2 January, 2006")), importer.MaxTitleBytes),
			User:  d.User,
		}
		for _, t := range sess.Turns {
			speaker := t.Speaker
			if n, ok := d.Names[speaker]; ok {
				speaker = n
			}
			text := t.Text
			if re != nil {
				text = re.ReplaceAllStringFunc(text, func(w string) string { return d.Names[w] })
			}
			c.Turns = append(c.Turns, importer.Turn{Role: t.Role, Speaker: speaker, Text: text, At: t.At.Add(shift)})
		}
		d.Conversations = append(d.Conversations, c)
	}
	return d
}

// rename maps the source's speaker names (as written and in capitals) to
// two different fake names chosen by x and y.
func (p Pool) rename(src *Sample, x, y uint64) map[string]string {
	m := map[string]string{}
	if len(p.names) < 2 {
		return m
	}
	n := uint64(len(p.names))
	a := int(x % n)
	b := int(y % (n - 1))
	if b >= a {
		b++
	}
	add := func(from, to string) {
		if strings.TrimSpace(from) == "" {
			return
		}
		m[from] = to
		m[strings.ToUpper(from)] = strings.ToUpper(to)
	}
	add(src.SpeakerA, p.names[a])
	add(src.SpeakerB, p.names[b])
	return m
}

// namePattern matches any key of names as a whole word, longest first so
// that one name containing another is replaced whole.
func namePattern(names map[string]string) *regexp.Regexp {
	if len(names) == 0 {
		return nil
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return regexp.MustCompile(`\b(?:` + strings.Join(keys, "|") + `)\b`)
}
