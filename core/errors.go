package core

import (
	"errors"
	"fmt"
)

// Code classifies an error for every surface at once: CLI exit codes, HTTP
// statuses and MCP tool errors are all derived from it, in one place each.
type Code string

const (
	CodeValidation Code = "VALIDATION_ERROR"
	CodeNotFound   Code = "NOT_FOUND"
	CodeForbidden  Code = "FORBIDDEN"
	CodeConflict   Code = "CONFLICT"
	CodeInternal   Code = "INTERNAL_ERROR"
	// CodeUnavailable: the daemon cannot be reached or is shutting down.
	CodeUnavailable Code = "UNAVAILABLE"
)

// Error is the one error type that crosses kandev's boundaries. Message is
// written for whoever must act on it, a person or a model.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Details carries structured context (a question's state, the queue).
	Details any `json:"details,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(d any) *Error {
	c := *e
	c.Details = d
	return &c
}

// CodeOf reports the code of err; anything that is not an *Error is internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// AsError returns err as an *Error, wrapping unknown errors as internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
