package budget

// Static is a budget whose answer never changes, for tests and for turning
// budgeting off explicitly: Deposit does nothing and Withdraw returns the
// same answer every time. Use [Always] and [Never]; the zero Static is
// Never. It is safe for concurrent use.
type Static struct {
	allow bool
}

var (
	// Always permits every retry: retries are then bounded only by the
	// retry layer's MaxAttempts and deadline.
	Always = Static{allow: true}
	// Never permits no retry.
	Never = Static{}
)

// Deposit does nothing.
func (Static) Deposit() {}

// Refund does nothing: a Static budget keeps no balance to give back to.
func (Static) Refund() {}

// Withdraw reports whether s permits retries: true for [Always], false for
// [Never].
func (s Static) Withdraw() bool { return s.allow }
