// Interop with the `age-encryption` npm package (the age authors' TypeScript implementation,
// 0.3.1: the first with hybrid post-quantum recipients), both ways, for X25519, scrypt and
// hybrid post-quantum (`mlkem768x25519`, PROTOCOL.md §7.1) recipients: the built SDK (pkg/)
// encrypts with encryptStream (format 'age') and age-encryption decrypts, and the other way
// round (binary and ASCII-armored), at sizes around the 64 KiB chunk; keys made by either
// side work on the other, and derive the same recipient strings. Wrong keys are errors on
// both sides; httpipe refuses to mix post-quantum with X25519 recipients (age-encryption
// 0.3.1 doesn't; we read its mixed files).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as age from 'age-encryption';
import { PKG, randomBytes, sha256 } from './lib/sdk.mjs';

const sdk = await import(PKG);

const KiB = 1024;
const SIZES = [0, 1, 64 * KiB, 64 * KiB + 1, 200 * KiB + 3];

/** Pipes `bytes` through a TransformStream and collects the output. */
async function through(bytes, transform) {
  const out = new Response(new Blob([bytes]).stream().pipeThrough(transform));
  return new Uint8Array(await out.arrayBuffer());
}
const oursEncrypt = (bytes, options) => through(bytes, sdk.encryptStream({ format: 'age', ...options }));
const oursDecrypt = (bytes, options) => through(bytes, sdk.decryptStream(options));

async function theirsEncrypt(bytes, { recipients, passphrase }, logN) {
  const e = new age.Encrypter();
  if (passphrase !== undefined) {
    e.setPassphrase(passphrase);
    if (logN) e.setScryptWorkFactor(logN);
  }
  for (const r of recipients ?? []) e.addRecipient(r);
  return e.encrypt(bytes);
}
async function theirsDecrypt(bytes, { identities, passphrase }) {
  const d = new age.Decrypter();
  if (passphrase !== undefined) d.addPassphrase(passphrase);
  for (const i of identities ?? []) d.addIdentity(i);
  return d.decrypt(bytes);
}

// Keys: each kind once from our generator and once from theirs.
const keys = {};
for (const [kind, ours, theirs] of [
  ['x25519', () => sdk.generateIdentity(), () => age.generateX25519Identity()],
  ['hybrid', () => sdk.generateHybridIdentity(), () => age.generateHybridIdentity()],
]) {
  const mine = ours();
  const yours = await theirs();
  keys[kind] = { mine, yours };
}

test('keys: both sides parse the other\'s identities and derive the same recipients', async () => {
  for (const kind of ['x25519', 'hybrid']) {
    for (const id of [keys[kind].mine, keys[kind].yours]) {
      assert.equal(sdk.identityToRecipient(id), await age.identityToRecipient(id), kind);
    }
  }
  assert.match(keys.hybrid.mine, /^AGE-SECRET-KEY-PQ-1[0-9A-Z]{58}$/);
  assert.match(keys.hybrid.yours, /^AGE-SECRET-KEY-PQ-1[0-9A-Z]{58}$/);
  assert.match(sdk.identityToRecipient(keys.hybrid.mine), /^age1pq1[0-9a-z]{1952}$/);
});

/** Encryption options and the matching decryption options of one case. */
function cases() {
  const out = [];
  for (const kind of ['x25519', 'hybrid']) {
    for (const who of ['mine', 'yours']) {
      const id = keys[kind][who];
      out.push({
        name: `${kind} (key made by ${who === 'mine' ? 'httpipe' : 'age-encryption'})`,
        enc: { recipients: [sdk.identityToRecipient(id)] },
        dec: { identities: [id] },
      });
    }
  }
  out.push({ name: 'scrypt', enc: { passphrase: 'correct horse battery staple' }, dec: { passphrase: 'correct horse battery staple' } });
  return out;
}

for (const c of cases()) {
  test(`httpipe encrypts, age-encryption decrypts: ${c.name}`, async () => {
    // scrypt at our default work factor (2^18) costs age-encryption's JS scrypt a few seconds a
    // file: two sizes are enough there.
    for (const size of c.enc.passphrase ? [0, 64 * KiB + 1] : SIZES) {
      const { bytes, sha256: want } = randomBytes(size);
      const ct = await oursEncrypt(bytes, c.enc);
      assert.equal(new TextDecoder().decode(ct.subarray(0, 22)), 'age-encryption.org/v1\n');
      const pt = await theirsDecrypt(ct, c.dec);
      assert.equal(sha256(pt), want, `${size} bytes`);
    }
  });

  test(`age-encryption encrypts, httpipe decrypts (binary and armored): ${c.name}`, async () => {
    for (const size of SIZES) {
      const { bytes, sha256: want } = randomBytes(size);
      const ct = await theirsEncrypt(bytes, c.enc, 12);
      assert.equal(sha256(await oursDecrypt(ct, c.dec)), want, `${size} bytes`);
      if (size === 1 || size === 64 * KiB + 1) {
        const armored = new TextEncoder().encode(age.armor.encode(ct));
        assert.equal(sha256(await oursDecrypt(armored, c.dec)), want, `armored, ${size} bytes`);
      }
    }
  });
}

test('hybrid: their stanza is mlkem768x25519 with a 1120-byte enc, as ours', async () => {
  const rcpt = sdk.identityToRecipient(keys.hybrid.yours);
  for (const ct of [await theirsEncrypt(new Uint8Array(1), { recipients: [rcpt] }),
    await oursEncrypt(new Uint8Array(1), { recipients: [rcpt] })]) {
    const line = new TextDecoder().decode(ct).split('\n')[1].split(' ');
    assert.equal(line[0], '->');
    assert.equal(line[1], 'mlkem768x25519');
    assert.equal(line.length, 3);
    assert.equal(Buffer.from(line[2], 'base64').length, 1120);
  }
});

test('several hybrid recipients: each opens the file, on both sides', async () => {
  const ids = [keys.hybrid.mine, keys.hybrid.yours];
  const recipients = ids.map((i) => sdk.identityToRecipient(i));
  const { bytes, sha256: want } = randomBytes(5000);
  const ours = await oursEncrypt(bytes, { recipients });
  const theirs = await theirsEncrypt(bytes, { recipients });
  for (const id of ids) {
    assert.equal(sha256(await theirsDecrypt(ours, { identities: [id] })), want);
    assert.equal(sha256(await oursDecrypt(theirs, { identities: [id] })), want);
  }
});

test('wrong keys: WRONG_KEY here, an error there; the X25519 key of a hybrid file is no key', async () => {
  const other = sdk.generateHybridIdentity();
  const rcpt = sdk.identityToRecipient(keys.hybrid.yours);
  const theirs = await theirsEncrypt(new Uint8Array(10), { recipients: [rcpt] });
  for (const identities of [[other], [keys.x25519.mine]]) {
    await assert.rejects(oursDecrypt(theirs, { identities }),
      (e) => e instanceof sdk.HttpipeError && e.code === 'WRONG_KEY', identities[0].slice(0, 20));
  }
  const ours = await oursEncrypt(new Uint8Array(10), { recipients: [rcpt] });
  await assert.rejects(theirsDecrypt(ours, { identities: [other] }));
  await assert.rejects(theirsDecrypt(ours, { identities: [keys.x25519.yours] }));
});

test('hybrid and X25519 recipients: httpipe refuses to mix them (as age does); a mixed file from age-encryption still opens', async () => {
  const recipients = [sdk.identityToRecipient(keys.hybrid.mine), sdk.identityToRecipient(keys.x25519.mine)];
  await assert.rejects(oursEncrypt(new Uint8Array(1), { recipients }),
    (e) => e instanceof sdk.HttpipeError && e.code === 'UNSUPPORTED' && /post-quantum/.test(e.message));
  // age-encryption 0.3.1 writes such a file (the Go age CLI refuses); a reader takes it, like
  // the CCTV vector hybrid_and_x25519, with either key.
  const { bytes, sha256: want } = randomBytes(100);
  const mixed = await theirsEncrypt(bytes, { recipients });
  for (const id of [keys.hybrid.mine, keys.x25519.mine]) {
    assert.equal(sha256(await oursDecrypt(mixed, { identities: [id] })), want);
  }
});
