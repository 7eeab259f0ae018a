package gatewaytest

import "github.com/setats/setats/internal/flighttest"

// The Flight client these tests drive the gateway with is internal/flighttest, shared with the
// gateway's own tests and benchmarks; these names keep the tests' spelling short.
type (
	Client    = flighttest.Client
	ChangeRow = flighttest.ChangeRow
	Changelog = flighttest.Changelog
	Col       = flighttest.Col
	WriteRow  = flighttest.WriteRow
	PutStream = flighttest.PutStream
)

// RowKind byte values (flighttest.KindInsert, ...).
const (
	KindInsert       = flighttest.KindInsert
	KindUpdateBefore = flighttest.KindUpdateBefore
	KindUpdateAfter  = flighttest.KindUpdateAfter
	KindDelete       = flighttest.KindDelete
)

// Functions of flighttest the tests call unqualified.
var (
	Dial            = flighttest.Dial
	KindString      = flighttest.KindString
	DecodeChangelog = flighttest.DecodeChangelog
	BuildBatch      = flighttest.BuildBatch
	WriteSchema     = flighttest.WriteSchema
	FormatValues    = flighttest.FormatValues
	FormatValue     = flighttest.FormatValue
)
