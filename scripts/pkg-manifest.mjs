// Writes pkg/package.json from js/package.json with the package's version: the root crate's
// (Cargo.toml [workspace.package] version), the one source of truth (js/package.json has none).
//   node scripts/pkg-manifest.mjs js/package.json pkg/package.json   (run by scripts/build-sdk.sh)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const [src, dst] = process.argv.slice(2);
const meta = JSON.parse(execFileSync('cargo', ['metadata', '--no-deps', '--format-version', '1', '--offline'],
  { encoding: 'utf8', maxBuffer: 64 << 20 }));
const { version } = meta.packages.find((p) => p.name === 'httpipe');
const { name, version: stray, ...rest } = JSON.parse(readFileSync(src, 'utf8'));
if (stray !== undefined) {
  console.error(`[build-sdk] ${src} has "version": "${stray}"; the package's version is the root crate's `
    + `(Cargo.toml [workspace.package] version = "${version}"): remove it from ${src}`);
  process.exit(1);
}
writeFileSync(dst, `${JSON.stringify({ name, version, ...rest }, null, 2)}\n`);
process.stdout.write(version);
