package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/offlinelock/offlinelock"
)

// Two models of one table name, one after the other (GORM's own suite
// does this): the cascades the first declared are replaced by what the
// second declares, so a delete through the second never follows a
// foreign key of a column its table no longer has.
type rcProfileOld struct {
	ID       uint
	MemberID uint
}

func (rcProfileOld) TableName() string { return "rc_profiles" }

type rcMemberOld struct {
	ID      uint
	Refer   uint         `gorm:"uniqueIndex"`
	Profile rcProfileOld `gorm:"constraint:OnDelete:CASCADE;foreignKey:MemberID;references:Refer"`
}

func (rcMemberOld) TableName() string { return "rc_members" }

type rcProfileNew struct {
	ID    uint
	Refer uint `gorm:"uniqueIndex"`
}

func (rcProfileNew) TableName() string { return "rc_profiles" }

type rcMemberNew struct {
	ID        uint
	ProfileID uint
	Profile   rcProfileNew `gorm:"constraint:OnDelete:CASCADE;foreignKey:ProfileID;references:Refer"`
}

func (rcMemberNew) TableName() string { return "rc_members" }

func TestCascadesOfAModelParsedAgainAreReplaced(t *testing.T) {
	eachDB(t, offlinelock.Config{}, func(t *testing.T, db *gorm.DB, p *offlinelock.Plugin) {
		m := db.Migrator()
		require.NoError(t, m.DropTable(&rcMemberOld{}, &rcProfileOld{}))
		t.Cleanup(func() { m.DropTable(&rcMemberNew{}, &rcProfileNew{}) })
		require.NoError(t, db.AutoMigrate(&rcMemberOld{}, &rcProfileOld{}))
		require.NoError(t, db.Create(&rcMemberOld{ID: 1, Refer: 7, Profile: rcProfileOld{ID: 1}}).Error)
		require.NoError(t, db.Delete(&rcMemberOld{ID: 1}).Error)

		require.NoError(t, m.DropTable(&rcMemberOld{}, &rcProfileOld{}))
		require.NoError(t, db.AutoMigrate(&rcProfileNew{}, &rcMemberNew{}))
		require.NoError(t, db.Create(&rcMemberNew{ID: 1, Profile: rcProfileNew{ID: 1, Refer: 7}}).Error)
		require.NoError(t, as(db, martin).Delete(&rcMemberNew{ID: 1}).Error, "no foreign key of the old model is followed")
	})
}
