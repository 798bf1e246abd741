package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/offlinelock/offlinelock"
)

// What the guard's refusal tells another client (issue 47): by default
// the holder and until when; with GuardNamesRecordOnly the record only.
// The setting is the database's: the last node to start decides.
func TestGuardRefusalNamesWhatItIsAsked(t *testing.T) {
	for _, d := range serverDatabases() {
		t.Run(d.name, func(t *testing.T) {
			db, p := gdSetup(t, d, offlinelock.Config{GuardNamesRecordOnly: true}) // martin holds customer 129
			plain := plainGORM(t, db)
			refusal := func() string {
				err := plain.Exec(`UPDATE gd_customers SET credit = 1 WHERE id = 129`).Error
				require.Error(t, err, "the held record's write is refused")
				var c GdCustomer
				require.NoError(t, plain.First(&c, 129).Error)
				assert.EqualValues(t, 100, c.Credit, "and changed nothing")
				require.NoError(t, plain.Exec(`UPDATE gd_customers SET credit = 7 WHERE id = 130`).Error, "a free record's write lands")
				return err.Error()
			}
			msg := refusal()
			assert.Contains(t, msg, "offlinelock: gd_customers 129 is locked by another session")
			assert.NotContains(t, msg, "martin")
			assert.NotContains(t, msg, "until")

			other := d.open(t) // a node with the default starts: it decides now
			require.NoError(t, other.Use(offlinelock.New(offlinelock.Config{Table: lockTableOf(p), Models: []any{&GdCustomer{}}})))
			msg = refusal()
			assert.Contains(t, msg, "is locked by martin")
			assert.Contains(t, msg, "until")
		})
	}
}
