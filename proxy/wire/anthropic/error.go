package anthropic

// ErrorBody is the JSON body of an error response, and the data of an
// in-band "error" stream event.
type ErrorBody struct {
	Type      string      `json:"type"`
	Error     ErrorDetail `json:"error"`
	RequestID string      `json:"request_id,omitempty"`
}

// ErrorDetail describes an error.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// NewErrorBody returns the body for an error of type typ.
func NewErrorBody(typ, message string) ErrorBody {
	return ErrorBody{Type: "error", Error: ErrorDetail{Type: typ, Message: message}}
}

// Error types and the status each comes with.
const (
	ErrInvalidRequest  = "invalid_request_error" // 400
	ErrAuthentication  = "authentication_error"  // 401
	ErrBilling         = "billing_error"         // 402
	ErrPermission      = "permission_error"      // 403
	ErrNotFound        = "not_found_error"       // 404
	ErrRequestTooLarge = "request_too_large"     // 413
	ErrRateLimit       = "rate_limit_error"      // 429
	ErrAPI             = "api_error"             // 500
	ErrTimeout         = "timeout_error"         // 504
	ErrOverloaded      = "overloaded_error"      // 529
)
