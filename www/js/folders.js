// Dropped folders: the browser hands over entries (FileSystemEntry, `webkitGetAsEntry`) that
// are walked here into files with their paths relative to the drop, e.g. "photos/2026/a.jpg"
// (the ZIP keeps them). A folder chosen with <input webkitdirectory> gives File objects with
// `webkitRelativePath` instead. No imports: the unit tests run this in Node with fake entries.

/**
 * What a drop carries, read at once (a DataTransfer is empty after the event returns).
 * @param {DataTransfer} dt
 * @returns {{ entries: (FileSystemEntry|null)[], files: File[], text: string }}
 */
export function readDrop(dt) {
  const items = [...(dt.items || [])].filter((i) => i.kind === 'file');
  return {
    entries: items.map((i) => (typeof i.webkitGetAsEntry === 'function' ? i.webkitGetAsEntry() : null)),
    files: [...(dt.files || [])],
    text: items.length ? '' : (dt.getData && dt.getData('text/plain')) || '',
  };
}

/** All entries of a directory (readEntries answers in batches until an empty one). */
function readAll(dir) {
  const reader = dir.createReader();
  const out = [];
  return new Promise((resolve, reject) => {
    const next = () => reader.readEntries((batch) => {
      if (!batch.length) { resolve(out); return; }
      out.push(...batch);
      next();
    }, reject);
    next();
  });
}

function fileOf(entry) {
  return new Promise((resolve, reject) => entry.file(resolve, reject));
}

/**
 * Walks a drop into files with relative paths; empty folders are kept as "name/" entries.
 * @param {{ entries: (FileSystemEntry|null)[], files: File[] }} drop  from {@link readDrop}
 * @returns {Promise<{ entries: {file?: File, path: string}[], folders: number }>}
 *   `folders`: how many folders were dropped (0: plain files)
 */
export async function walkDrop(drop) {
  const out = [];
  let folders = 0;
  const walk = async (dir, prefix) => {
    const children = await readAll(dir);
    if (!children.length) { out.push({ path: `${prefix}/` }); return; }
    // a stable order: the same folder gives the same ZIP
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      const path = `${prefix}/${child.name}`;
      if (child.isDirectory) await walk(child, path);
      else if (child.isFile) out.push({ file: await fileOf(child), path });
    }
  };
  const n = Math.max(drop.entries.length, drop.files.length);
  for (let i = 0; i < n; i++) {
    const entry = drop.entries[i];
    if (entry && entry.isDirectory) {
      folders++;
      await walk(entry, entry.name);
    } else if (drop.files[i]) {
      out.push({ file: drop.files[i], path: drop.files[i].name });
    } else if (entry && entry.isFile) {
      out.push({ file: await fileOf(entry), path: entry.name });
    }
  }
  return { entries: out, folders };
}

/** Files from an <input type=file> (with `webkitdirectory`: their paths in the folder). */
export function fromInput(files) {
  return [...files].map((file) => ({ file, path: file.webkitRelativePath || file.name }));
}

/**
 * What the ZIP of `entries` is called: "photos.zip" when everything sits in one folder,
 * else "httpipe-N-files.zip".
 */
export function zipName(entries) {
  const tops = new Set(entries.map((e) => e.path.split('/')[0]));
  const nested = entries.every((e) => e.path.includes('/'));
  if (tops.size === 1 && nested) return `${[...tops][0]}.zip`;
  return `httpipe-${entries.filter((e) => e.file).length}-files.zip`;
}
