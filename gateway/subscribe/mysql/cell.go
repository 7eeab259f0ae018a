package mysql

import (
	"strconv"

	"golang.org/x/text/encoding/charmap"
	"vitess.io/vitess/go/mysql/binlog"
	querypb "vitess.io/vitess/go/vt/proto/query"
)

// binlogCell decodes one cell with vitess' binlog.CellValue and returns its canonical text (raw
// bytes for binary types; floats in the shortest decimal form; latin1 text converted to UTF-8)
// and its length in data.
func binlogCell(data []byte, pos int, typ byte, metadata uint16, f *querypb.Field, latin1 bool) ([]byte, int, error) {
	v, l, err := binlog.CellValue(data, pos, typ, metadata, f, false)
	if err != nil {
		return nil, 0, err
	}
	raw := v.Raw()
	switch f.Type {
	case querypb.Type_FLOAT32, querypb.Type_FLOAT64:
		bits := 64
		if f.Type == querypb.Type_FLOAT32 {
			bits = 32
		}
		if x, err := strconv.ParseFloat(string(raw), bits); err == nil {
			return strconv.AppendFloat(nil, x, 'g', -1, bits), l, nil
		}
	}
	if latin1 {
		if u, err := charmap.Windows1252.NewDecoder().Bytes(raw); err == nil {
			return u, l, nil
		}
	}
	return append([]byte{}, raw...), l, nil
}
