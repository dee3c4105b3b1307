package zkclient

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// quotaExceededCode is ZooKeeper's QUOTAEXCEEDED
// (KeeperException.Code.QUOTAEXCEEDED, 3.7+).
const quotaExceededCode zk.ErrCode = -125

// quotaExceededText is what go-zookeeper v1.0.4 returns for that code: it
// has no sentinel for it and formats unknown codes as "unknown error: N".
var quotaExceededText = fmt.Sprintf("unknown error: %v", quotaExceededCode)

// IsQuotaExceeded reports whether err is ZooKeeper's QuotaExceeded reply,
// by its code (the client library gives it no sentinel), or an error
// already classified as ErrQuotaExceeded.
func IsQuotaExceeded(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e == ErrQuotaExceeded || e.Error() == quotaExceededText {
			return true
		}
	}
	return errors.Is(err, ErrQuotaExceeded)
}
