package bench

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/perpetuity/perpetuity/migrations"
)

// scratchDatabase creates an empty migrated database beside base's and
// returns its URL and a function that drops it: dropping a database is
// instant where deleting a million-item tenant is not, and the bench leaves
// nothing behind in the database it was given. When the role may not
// create databases the bench works in base itself.
func scratchDatabase(ctx context.Context, base string) (dbURL string, drop func(), scratch bool, note string, err error) {
	dbURL, drop, err = migrations.Scratch(ctx, base, "perpetuity_bench_")
	if errors.Is(err, migrations.ErrNoScratch) {
		if err := migrations.Up(base); err != nil {
			return "", drop, false, "", err
		}
		return base, drop, false, "scratch tenants in the given database (" + err.Error() + ")", nil
	}
	if err != nil {
		return "", drop, false, "", err
	}
	u, _ := url.Parse(dbURL)
	return dbURL, drop, true, "scratch database " + strings.TrimPrefix(u.Path, "/") + " (dropped afterwards)", nil
}
