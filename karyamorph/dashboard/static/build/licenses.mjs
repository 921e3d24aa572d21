// Writes ../vendor/LICENSES.txt: the name, version, licence and licence text of every package bundled.
import { readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const root = "node_modules";
const folders = [];
for (const name of readdirSync(root).sort()) {
  if (name.startsWith(".") || name === "esbuild") continue;
  if (name.startsWith("@")) {
    if (name === "@esbuild") continue;
    for (const sub of readdirSync(join(root, name)).sort()) folders.push(join(root, name, sub));
  } else folders.push(join(root, name));
}
let out = "Third-party code in this folder (built by ../build, see its README.md).\n\n";
for (const folder of folders) {
  const pkg = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
  const file = ["LICENSE", "LICENSE.md", "LICENSE.txt"].map((f) => join(folder, f)).find(existsSync);
  out += `=== ${pkg.name} ${pkg.version} (${pkg.license})\n${file ? readFileSync(file, "utf8") : ""}\n`;
}
writeFileSync("../vendor/LICENSES.txt", out);
