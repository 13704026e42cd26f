package quickstart

// The Go quick starts are built as programs of their own (runGo). Importing
// their SDKs here has `go test` compile them into the build cache while it
// builds this package, before any test runs, so those builds only link.
import (
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/anthropics/anthropic-sdk-go/v2/option"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/option"
)
