package publish

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Encoded sizes of the ZooKeeper wire format (jute), as go-zookeeper writes
// a Multi: a 4-byte length, the 8-byte request header, then per op a 9-byte
// multi header (type int32, done bool, err int32) and the op's fields
// (strings and buffers are a 4-byte length plus the bytes), then a 9-byte
// done header.
const (
	frameOverhead = 4 + 8 + 9
	opHeader      = 9
	// opSlack is added per op so that the estimate stays conservative if a
	// client version encodes something slightly larger.
	opSlack = 8
)

func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n
}

// opSize is the encoded size of one Multi op, header and slack included.
func opSize(op any) int {
	n := opHeader + opSlack
	switch o := op.(type) {
	case *zk.CreateRequest:
		n += 4 + len(o.Path) + 4 + len(o.Data) + aclSize(o.Acl) + 4
	case *zk.SetDataRequest:
		n += 4 + len(o.Path) + 4 + len(o.Data) + 4
	case *zk.DeleteRequest:
		n += 4 + len(o.Path) + 4
	case *zk.CheckVersionRequest:
		n += 4 + len(o.Path) + 4
	default:
		panic(fmt.Sprintf("publish: opSize: unexpected op %T", op))
	}
	return n
}

// multiSize is the encoded size of a Multi of ops, conservatively.
func multiSize(ops []any) int {
	n := frameOverhead
	for _, op := range ops {
		n += opSize(op)
	}
	return n
}
