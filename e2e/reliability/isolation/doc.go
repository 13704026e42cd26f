// Package isolation measures tenant isolation under randomized traffic
// (issue 9, item 5): one real server, twenty tenants signed up through the
// console, each with its own canary string in everything it stores, and
// thousands of random requests over every API, the memory tools, import,
// export, pass-through routes and console pages, with other tenants' ids
// thrown in. A foreign canary anywhere the test can see (a response body,
// an SSE stream, a console page, an export, a request the fake provider
// received, a memory tool result) is a leak. The test lives in
// isolation_test.go; this file only names the package.
//
// The tenants share everything a careless implementation could key on
// instead of the tenant: memory user names (alice, bob, carol),
// conversation ids (X-Perpetuity-Conversation and import ids) and the
// vocabulary of what they say, so a pooled scan, a cache or a lookup that
// forgot the tenant would surface another tenant's turns. Only the canary
// differs.
package isolation
