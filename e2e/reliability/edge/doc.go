// Package edge is issue 15, findings 2, 3 and 13 (items 102, 103 and 113):
// what reaches the server before any handler decides anything. Huge random
// methods and paths must not grow /metrics or the log beyond a fixed set of
// label values; a request whose body is slow or never comes must be
// answered or closed at the body deadline and give back its connection;
// PERPETUITY_PUBLIC_URL must be read as a URL, so that HTTPS:// turns on
// Secure and __Host- cookies and HSTS like https:// does.
package edge
