// Package quickstart tests the README's quick starts as they are written:
// the Node, Go and curl examples are read out of README.md (each fenced
// block follows an HTML comment <!-- quickstart:NAME -->) and run against
// the real binary, with the official Node SDKs installed from npm at
// pinned versions (cached under the user cache directory) and a fake
// provider behind the proxy. The Python examples are not run: the test
// machine cannot reach PyPI.
package quickstart
