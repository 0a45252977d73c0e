// Package refusal makes the sentinel errors of the layers that refuse
// calls (loadshed, filter) match rampart.ErrRefused as well.
package refusal

import "github.com/rampart-go/rampart"

// New returns a sentinel error with the message msg that matches
// [rampart.ErrRefused] with errors.Is.
func New(msg string) error { return &refusal{msg} }

type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// Is reports whether target is rampart.ErrRefused.
func (r *refusal) Is(target error) bool { return target == rampart.ErrRefused }
