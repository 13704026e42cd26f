package web

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/util"
	"github.com/labstack/echo/v4"
)

// Casbin request values; policies/model.conf explains them.
const (
	subjectAnonymous = "anonymous"
	domainNone       = "none"
	domainPlatform   = "platform"
	domainAny        = "*"
)

func subjectOf(accountID int64) string { return "account:" + strconv.FormatInt(accountID, 10) }

func tenantDomain(tenantID int64) string { return "tenant:" + strconv.FormatInt(tenantID, 10) }

// authorizer is the one place console authorization is decided. The
// policy (role -> route template, method) is the embedded file; the binding
// of an account to a role in a domain is the account row read with the
// session on this very request, mirrored into the enforcer just before the
// check, so a role change or a disable made by any serving process holds on
// the next request everywhere. A nil enforcer denies everything.
type authorizer struct {
	mu       sync.Mutex // guards e and mirrored: mirroring and checking are one step
	e        *casbin.Enforcer
	mirrored map[string]binding // what e holds per subject, to skip rebuilding role links
}

// newAuthorizer builds the enforcer from model and policy text. Unlike
// Casbin's string adapter it fails on any line it cannot read, and on a
// policy without a single allow rule, so a broken policy is never served.
func newAuthorizer(modelText, policyText string) (*authorizer, error) {
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return nil, fmt.Errorf("casbin model: %w", err)
	}
	e, err := casbin.NewEnforcer(m)
	if err != nil {
		return nil, fmt.Errorf("casbin enforcer: %w", err)
	}
	e.EnableLog(false)
	e.EnableAutoSave(false)
	rules := 0
	for n, line := range strings.Split(policyText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := csv.NewReader(strings.NewReader(line))
		r.TrimLeadingSpace = true
		fields, err := r.Read()
		if err != nil {
			return nil, fmt.Errorf("policy line %d: %w", n+1, err)
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		switch {
		case fields[0] == "p" && len(fields) == 5:
			if _, err := e.AddPolicy(fields[1], fields[2], fields[3], fields[4]); err != nil {
				return nil, fmt.Errorf("policy line %d: %w", n+1, err)
			}
			rules++
		case fields[0] == "g" && len(fields) == 4:
			if _, err := e.AddGroupingPolicy(fields[1], fields[2], fields[3]); err != nil {
				return nil, fmt.Errorf("policy line %d: %w", n+1, err)
			}
		default:
			return nil, fmt.Errorf("policy line %d: want \"p, sub, dom, obj, act\" or \"g, user, role, dom\", got %q", n+1, line)
		}
	}
	if rules == 0 {
		return nil, errors.New("policy has no rules")
	}
	// Platform admins are bound in domain "*"; keyMatch lets that binding
	// (and the role-to-role links in "*") hold in every domain.
	e.AddNamedDomainMatchingFunc("g", "KeyMatch", util.KeyMatch)
	if err := e.BuildRoleLinks(); err != nil {
		return nil, fmt.Errorf("casbin role links: %w", err)
	}
	return &authorizer{e: e, mirrored: map[string]binding{}}, nil
}

// binding is an account's role and the domain it holds it in.
type binding struct {
	role   string
	domain string
}

// allow decides one request. sub is subjectAnonymous or an account subject
// with its binding b.
func (a *authorizer) allow(sub string, b binding, dom, obj, act string) (bool, error) {
	if a == nil || a.e == nil {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if have, ok := a.mirrored[sub]; sub != subjectAnonymous && (!ok || have != b) {
		// Forget first, so a failure below leaves the subject unbound
		// (denied) rather than bound to a stale role.
		delete(a.mirrored, sub)
		if _, err := a.e.DeleteRolesForUser(sub); err != nil {
			return false, fmt.Errorf("clear binding: %w", err)
		}
		if b.role != "" {
			if _, err := a.e.AddRoleForUserInDomain(sub, b.role, b.domain); err != nil {
				return false, fmt.Errorf("bind role: %w", err)
			}
		}
		a.mirrored[sub] = b
	}
	return a.e.Enforce(sub, dom, obj, act)
}

// hasRule reports whether any rule names this route and method at all; New
// refuses to serve a route the policy does not mention.
func (a *authorizer) hasRule(obj, act string) bool {
	if a == nil || a.e == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rules, err := a.e.GetFilteredPolicy(2, obj, act)
	return err == nil && len(rules) > 0
}

// authorize is the one middleware that enforces every console route: the
// signed-in account (or anonymous), the tenant the session acts in as
// domain, the route template Echo matched, and the method.
func (c *Console) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		s := sessionOf(ec)
		sub, dom, b := subjectAnonymous, domainNone, binding{}
		if s != nil {
			sub, dom, b = subjectOf(s.AccountID), s.domain(), s.binding()
		}
		ok, err := c.authz.allow(sub, b, dom, ec.Path(), ec.Request().Method)
		if err != nil {
			c.log.Error("console authorization failed, denying", "err", err, "route", ec.Path())
			ok = false
		}
		if ok {
			return next(ec)
		}
		if s == nil {
			if ec.Request().Method == http.MethodGet {
				return ec.Redirect(http.StatusSeeOther, "/signin")
			}
			return c.fail(ec, http.StatusUnauthorized, "Sign in first.")
		}
		return c.fail(ec, http.StatusForbidden, "Your role does not allow this.")
	}
}
