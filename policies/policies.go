// Package policies holds the console's Casbin model and policy, embedded in
// the binary so that the rules a build enforces are the rules it was tested
// with. web builds its enforcer from Model and Policy; role bindings of
// accounts come from the database, never from these files.
package policies

import _ "embed" // for the //go:embed directives below

// The embedded texts are unexported and handed out by value, so no package
// can change the rules of another at run time.
var (
	//go:embed model.conf
	model string
	//go:embed policy.csv
	policy string
)

// Model is the Casbin model: RBAC with tenant domains.
func Model() string { return model }

// Policy is the Casbin policy: which role may use which route template.
func Policy() string { return policy }
