package app

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/perpetuity/perpetuity/memory/importer"
)

// checkUserFlag refuses a memory user name PostgreSQL cannot hold (issue
// 15, finding 9): the import's lines are checked by the importer, but the
// default user comes from the command line, and a byte that is not UTF-8
// surfaced as the database's encoding error after the file was read.
func checkUserFlag(flag, name string) error {
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return UsageError{fmt.Sprintf("%s: contains a NUL character (U+0000), which cannot be stored", flag)}
	case !utf8.ValidString(name):
		return UsageError{fmt.Sprintf("%s: not valid UTF-8, which cannot be stored", flag)}
	case len(name) > importer.MaxNameBytes:
		return UsageError{fmt.Sprintf("%s: longer than %d bytes", flag, importer.MaxNameBytes)}
	}
	return nil
}
