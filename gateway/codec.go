package gateway

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// encoding is how a Setats payload inside Flight is encoded (proto/README.md "Encodings").
type encoding uint8

const (
	// encBinary is the binary protobuf encoding; the default for payloads without one (PATH
	// descriptors).
	encBinary encoding = iota
	// encJSON is canonical proto3 JSON (protojson).
	encJSON
)

func (e encoding) String() string {
	if e == encJSON {
		return "json"
	}
	return "binary"
}

// detectEncoding returns encJSON when the first byte of b that is not blank (space, tab, CR, LF)
// is '{', else encBinary. An empty payload is binary (the empty message).
func detectEncoding(b []byte) encoding {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return encJSON
		default:
			return encBinary
		}
	}
	return encBinary
}

var (
	jsonIn  = protojson.UnmarshalOptions{}
	jsonOut = protojson.MarshalOptions{EmitUnpopulated: true}
)

// decodeMsg decodes payload into m in the encoding it detects and returns that encoding, so the
// answer can be written in it. what names the payload in errors ("WriteCommand",
// "create-table body"). A payload that does not decode is InvalidArgument.
func decodeMsg(payload []byte, m proto.Message, what string) (encoding, error) {
	enc := detectEncoding(payload)
	var err error
	if enc == encJSON {
		err = jsonIn.Unmarshal(payload, m)
	} else {
		err = proto.Unmarshal(payload, m)
	}
	if err != nil {
		return enc, status.Errorf(codes.InvalidArgument, "%s: cannot decode %s as %s protobuf: %v",
			what, m.ProtoReflect().Descriptor().FullName(), enc, err)
	}
	return enc, nil
}

// encodeMsg encodes m in enc. JSON answers emit unpopulated fields so that clients reading them
// with json.loads find every field, zero values included.
func encodeMsg(enc encoding, m proto.Message) ([]byte, error) {
	var b []byte
	var err error
	if enc == encJSON {
		b, err = jsonOut.Marshal(m)
	} else {
		b, err = proto.Marshal(m)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return b, nil
}
