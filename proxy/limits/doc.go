// Package limits holds the per-key request and token limits (issue 9, item
// 12). It is its own package because the limiter is state of its own with a
// narrow seam: the proxy admits a resolved key (Limiter.Admit), charges a
// reply's tokens (Limiter.Charge) and hands an import its token budget
// (Limiter.Budget); the refusal's wording and status are the proxy's.
//
// Behaviour:
//   - The limits are set per tenant (store.Limits, `perpetuity tenant
//     limits`) and apply to each of the tenant's keys on its own; a tenant
//     without limits of its own gets the defaults (proxy.Config.KeyRPM and
//     KeyTPM). A key may have limits of its own (store.KeyLimits, the
//     console's key limits form), which replace the tenant's field by field;
//     they come with the resolved key, so an edit holds on the next request
//     in the process that made it and within the key cache's TTL elsewhere.
//     0 is
//     unlimited. A tenant's limits are read through a cache that trusts an
//     entry for limitsCacheTTL, so a change takes effect within seconds.
//   - Counting is in-process: with N replicas behind a balancer a key may
//     get up to N times its limits. No database write per request.
//   - Requests per minute and tokens per minute are token buckets holding
//     one minute's worth and refilled continuously. A request takes one
//     request token when it is admitted. Provider tokens (input + output as
//     the provider reports them; estimated from the bytes, 4 to a token,
//     when it reports none) are charged when the reply ends, so requests
//     already running can take a key past its token limit: the bucket then
//     goes into debt, and the key is refused until refill pays it back.
//   - Tokens per day are counted per key per UTC day, in-process, and reset
//     at UTC midnight (and when the process restarts).
//   - A refusal comes after key resolution and before the request is
//     parsed, stored or forwarded: status 429, Retry-After in whole
//     seconds (at least 1), the caller's dialect's rate-limit error and the
//     dialect's rate-limit headers for the limits that are set. Every
//     request on a key counts, pass-through routes (/v1/models, ...) and
//     Perpetuity's own import route included (Budget).
//   - When the limits cannot be read, the last ones read are kept (the
//     defaults if none were): limiting protects budgets, it is not an
//     access control, and a database outage has its own answer downstream.
package limits
