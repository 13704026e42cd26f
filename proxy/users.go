package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/perpetuity/perpetuity/memory"
	"github.com/perpetuity/perpetuity/memory/store"
	"github.com/perpetuity/perpetuity/proxy/limits"
)

// Probe mode and Capture: off promise that nothing is stored, yet each
// created the memory user it named and its conversation (20 probes with
// random names made 20 of each; issue 15, finding 12). Such a request now
// only looks them up: a user that does not exist has no memory, and its
// frame is the question alone. Any other request creates the user on first
// sight, within the key's PERPETUITY_KEY_USERS_PER_DAY new users a day.

// storesNothingKey marks, on the request's echo context, a request that
// must write no memory (probe mode, Capture: off).
const storesNothingKey = "perpetuity.stores_nothing"

func storesNothing(c echo.Context) bool {
	v, _ := c.Get(storesNothingKey).(bool)
	return v
}

// memoryUser is the id of the tenant's memory user called name: created
// on first sight as one of key k's new users of the day, or only looked up
// for a request that stores nothing (0 when there is none).
func (p *Proxy) memoryUser(ctx context.Context, c echo.Context, tenantID int64, k store.KeyIdentity, name string) (int64, error) {
	if storesNothing(c) {
		id, err := p.dir.UserByName(ctx, tenantID, name)
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, p.memoryUnavailable(c, "memory user", err)
		}
		return id, nil
	}
	id, err := p.dir.EnsureUserForKey(ctx, tenantID, k.KeyID, name, p.cfg.KeyUsersPerDay)
	if errors.Is(err, store.ErrUserQuota) {
		return 0, usersPerDayRefusal(p.cfg.KeyUsersPerDay, time.Now())
	}
	if err != nil {
		return 0, p.memoryUnavailable(c, "memory user", err)
	}
	return id, nil
}

// usersPerDayRefusal is the 429 of a key past its new users of the day,
// in the caller's dialect, open again at UTC midnight.
func usersPerDayRefusal(limit int, now time.Time) *APIError {
	midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	secs := limits.RetryAfter(midnight.Sub(now))
	return &APIError{
		Status: http.StatusTooManyRequests, Kind: RateLimited, OpenAIType: "users",
		Message: fmt.Sprintf("This Perpetuity key has created its %d new memory users for today (PERPETUITY_KEY_USERS_PER_DAY); "+
			"existing users still work. Please try again in %ds.", limit, secs),
		RetryAfter: strconv.FormatInt(secs, 10),
	}
}

// conversation sets the turn's conversation: created on first sight, or
// only looked up for a request that stores nothing (0 when there is none:
// the frame then has no current conversation).
func (p *Proxy) conversation(ctx context.Context, c echo.Context, t *turn, key, title string) error {
	var id int64
	var err error
	switch {
	case !storesNothing(c):
		t.convKey, t.convTitle = key, title
		id, err = p.ensureConversation(ctx, t.who, key, title)
	case t.who.UserID == 0:
		return nil
	default:
		id, err = p.dir.FindConversation(ctx, t.who.TenantID, t.who.UserID, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
	}
	if err != nil {
		return p.memoryUnavailable(c, "conversation", err)
	}
	t.who.ConversationID = id
	c.Response().Header().Set(HeaderConvID, strconv.FormatInt(id, 10))
	return nil
}

// ensureConversation is EnsureConversation through this process's cache.
func (p *Proxy) ensureConversation(ctx context.Context, who memory.Who, key, title string) (int64, error) {
	k := convKey{tenant: who.TenantID, user: who.UserID, ext: key}
	// Read before the lookup: an erasure applied meanwhile leaves the
	// entry already stale.
	erasures := p.mem.Erasures(who.TenantID)
	if id, ok := p.convs.get(k, erasures); ok {
		return id, nil
	}
	id, err := p.dir.EnsureConversation(ctx, who.TenantID, who.UserID, key, storableTitle(title))
	if err != nil {
		return 0, err
	}
	p.convs.put(k, id, erasures)
	return id, nil
}

// creatorKey carries, in a request's context, the key whose new memory
// users an import counts against.
type creatorKey struct{}

// UserCreator is what ImportDirectory needs of the store.
type UserCreator interface {
	EnsureUser(ctx context.Context, tenantID int64, name string) (int64, error)
	EnsureUserForKey(ctx context.Context, tenantID, keyID int64, name string, perDay int) (int64, error)
	EnsureConversation(ctx context.Context, tenantID, userID int64, extKey, title string) (int64, error)
}

// ImportDirectory is the importer's directory on the import route: a user
// an import line names counts against the importing key's new users of the
// day, as X-Perpetuity-User does (Identify puts the key in the request's
// context). Without a key (the command line, run by an operator) users are
// created freely.
type ImportDirectory struct {
	Store  UserCreator
	PerDay int
}

// EnsureUser finds or creates a memory user, as the importing key's when
// the context names one.
func (d ImportDirectory) EnsureUser(ctx context.Context, tenantID int64, name string) (int64, error) {
	if keyID, ok := ctx.Value(creatorKey{}).(int64); ok {
		return d.Store.EnsureUserForKey(ctx, tenantID, keyID, name, d.PerDay)
	}
	return d.Store.EnsureUser(ctx, tenantID, name)
}

// EnsureConversation finds or creates a conversation.
func (d ImportDirectory) EnsureConversation(ctx context.Context, tenantID, userID int64, extKey, title string) (int64, error) {
	return d.Store.EnsureConversation(ctx, tenantID, userID, extKey, title)
}
