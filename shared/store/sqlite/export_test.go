package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// SetSchemaVersionForTest stamps the file with schema version v.
func (s *Store) SetSchemaVersionForTest(ctx context.Context, v int) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	})
}
