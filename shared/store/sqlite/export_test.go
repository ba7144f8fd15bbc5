package sqlite

import (
	"context"
	"fmt"
)

// SetSchemaVersionForTest stamps the file with schema version v.
func (s *Store) SetSchemaVersionForTest(ctx context.Context, v int) error {
	return s.write(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	})
}

// WriterPragmaForTest reads PRAGMA name on the writer connection.
func (s *Store) WriterPragmaForTest(ctx context.Context, name string) (string, error) {
	var v string
	err := s.write(ctx, func(ctx context.Context, tx wtx) error { return tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v) })
	return v, err
}
