package confd

import (
	"encoding/base64"
	"errors"
	"path"
	"runtime"
)

// SafeError reports whether err, returned by one of FuncMap's functions,
// can be shown as it is without quoting a value: a value may be a secret,
// and what a render failure says goes to logs and to the status node
// every publisher reads. literal tells whether a string is spelt out in
// the template (template text is not secret).
//
// Shown: a missing key the template names literally ("key does not
// exist: /db/host"; a key computed from values is not), a malformed gets
// pattern, base64Decode's "illegal base64 data at input byte N", map's
// errors, the size limits of seq and replace, and Go runtime errors (div
// and mod by zero). Withheld: json's and jsonArray's decoding errors,
// and atoi's and parseBool's (strconv quotes its input).
func SafeError(err error, literal func(string) bool) bool {
	var ke *KeyError
	var b64 base64.CorruptInputError
	var le *limitError
	var re runtime.Error
	switch {
	case errors.As(err, &ke):
		return literal != nil && literal(ke.Key)
	case errors.Is(err, path.ErrBadPattern), errors.As(err, &b64), errors.As(err, &le),
		errors.Is(err, errInvalidMap), errors.Is(err, errMapKeys), errors.As(err, &re):
		return true
	}
	return false
}
