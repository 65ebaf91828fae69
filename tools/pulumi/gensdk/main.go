// gensdk binds a package schema with Pulumi's schema binder (the metaschema validation `pulumi package gen-sdk`
// runs) and writes the SDK that Pulumi's own code generator makes for one language.
//
// Why not `pulumi package gen-sdk`: the CLI hands code generation to the language host
// (pulumi-language-nodejs, pulumi-language-go), and the Go module proxy serves neither module
// (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3 and sdk/go/pulumi-language-go/v3: 403 on
// their version lists). The CLI sends the host the schema (pkg/v3 cmd/pulumi/packages/packages.go GenSDK), and the
// host binds it and calls the generator used here (pulumi/pulumi sdk/nodejs/cmd/pulumi-language-nodejs/main.go
// GeneratePackage: schema.BindSpec, then codegen.GeneratePackage; read in an older release of that file, not at
// v3.274.1, whose source is not served), from github.com/pulumi/pulumi/pkg/v3 at the CLI's version.
//
// For Go, the generator writes no go.mod for a schema that does not opt into packing; gensdk writes one in the root
// package's folder, its module path the import path the generated code uses (codegen's default for the package),
// requiring github.com/pulumi/pulumi/sdk/v3 at -sdk-version.
//
//	gensdk -schema schema.json -language nodejs|go -out DIR [-sdk-version v3.x.y]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/blang/semver"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// noLoader refuses every other package: the schema must not reference one.
type noLoader struct{}

func (noLoader) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema references package %q; gensdk loads none", pkg)
}

func (noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return noLoader{}.LoadPackage(d.Name, d.Version)
}

func (noLoader) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, fmt.Errorf("the schema references package %q; gensdk loads none", pkg)
}

func (noLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return noLoader{}.LoadPackageReference(d.Name, d.Version)
}

// goModule adds a go.mod to the root package of a generated Go SDK (the folder holding the top-level doc.go).
func goModule(pkg *schema.Package, files map[string][]byte, sdkVersion string) error {
	if _, ok := files["go.mod"]; ok {
		return nil
	}
	importBase := gogen.ExtractImportBasePath(pkg.Reference())
	if info, ok := pkg.Language["go"].(gogen.GoPackageInfo); ok && info.ImportBasePath != "" {
		importBase = info.ImportBasePath
	}
	for name := range files {
		if path.Base(name) == "doc.go" && strings.Count(name, "/") == 1 {
			files[path.Join(path.Dir(name), "go.mod")] = []byte(fmt.Sprintf(
				"module %s\n\ngo 1.25\n\nrequire github.com/pulumi/pulumi/sdk/v3 %s\n", importBase, sdkVersion))
			return nil
		}
	}
	return errors.New("no root package (doc.go) in the generated Go SDK")
}

func run(schemaPath, language, out, sdkVersion string) error {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	pkg, diags, err := schema.BindSpec(spec, noLoader{}, schema.ValidationOptions{})
	if err != nil {
		return err
	}
	for _, d := range diags {
		fmt.Fprintln(os.Stderr, d.Error())
	}
	if diags.HasErrors() {
		return errors.New("the schema does not bind")
	}
	var files map[string][]byte
	switch language {
	case "nodejs":
		files, err = nodejs.GeneratePackage("gensdk", pkg, nil, nil, true, noLoader{})
	case "go":
		files, err = gogen.GeneratePackage("gensdk", pkg, nil)
		if err == nil {
			err = goModule(pkg, files, sdkVersion)
		}
	default:
		return fmt.Errorf("language %q: nodejs or go", language)
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for name, body := range files {
		target := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	schemaPath := flag.String("schema", "", "the package schema (JSON)")
	language := flag.String("language", "", "nodejs or go")
	out := flag.String("out", "", "the folder to write the SDK into (replaced)")
	sdkVersion := flag.String("sdk-version", "v3.274.1", "Go: the github.com/pulumi/pulumi/sdk/v3 version its go.mod requires")
	flag.Parse()
	if *schemaPath == "" || *language == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*schemaPath, *language, *out, *sdkVersion); err != nil {
		fmt.Fprintln(os.Stderr, "gensdk:", err)
		os.Exit(1)
	}
}
