package assembly

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFileAssets(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"version": "39.0.0", "files": {
	  "bbb": {"source": {"path": "asset.bbb", "packaging": "zip"},
	          "destinations": {"z": {"objectKey": "bbb.zip"}, "a": {"objectKey": "bbb-first.zip"}}},
	  "tpl": {"source": {"path": "Stack.template.json", "packaging": "file"},
	          "destinations": {"d": {"objectKey": "tpl.json"}}},
	  "aaa": {"source": {"path": "asset.aaa.json", "packaging": "file"},
	          "destinations": {"d": {"objectKey": "aaa.json"}}}}}`
	if err := os.WriteFile(filepath.Join(dir, "Stack.assets.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FileAssets(dir, "Stack")
	if err != nil {
		t.Fatal(err)
	}
	want := []FileAsset{
		{ID: "aaa", Path: "asset.aaa.json", Packaging: PackagingFile, ObjectKey: "aaa.json"},
		{ID: "bbb", Path: "asset.bbb", Packaging: PackagingZip, ObjectKey: "bbb-first.zip"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FileAssets = %+v, want %+v", got, want)
	}
	if _, err := FileAssets(dir, "Other"); !os.IsNotExist(err) {
		t.Errorf("a missing manifest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Bad.assets.json"), []byte(`{"files": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FileAssets(dir, "Bad"); err == nil || !strings.Contains(err.Error(), "Bad.assets.json") {
		t.Errorf("a broken manifest: %v", err)
	}
}
