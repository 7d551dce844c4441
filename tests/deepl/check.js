// The official deepl-node client, unchanged, against mt-server (run by tests/test_deepl.py):
//   node check.js SERVER_URL AUTH_KEY WORK_DIR DOCX_PATH
// Prints one line per check ("ok NAME" or "FAIL NAME: why") and exits 1 if any failed.
'use strict';
const fs = require('fs');
const path = require('path');
const deepl = require('deepl-node');

const [serverUrl, authKey, workDir, docxPath] = process.argv.slice(2);
let failed = 0;

function check(name, cond, why) {
  if (cond) console.log('ok ' + name);
  else {
    failed++;
    console.log('FAIL ' + name + ': ' + why);
  }
}

async function run(name, fn) {
  try {
    await fn();
  } catch (e) {
    failed++;
    console.log('FAIL ' + name + ': threw ' + (e && e.constructor && e.constructor.name) + ': ' + (e && e.message));
  }
}

async function main() {
  const t = new deepl.Translator(authKey, { serverUrl, maxRetries: 1, minTimeout: 10000 });

  await run('translateText', async () => {
    const r = await t.translateText('Hello world.', 'en', 'de');
    check('translateText with source', typeof r.text === 'string' && r.text.length > 0 && r.detectedSourceLang === 'en',
          JSON.stringify(r));
    check('billedCharacters', r.billedCharacters === 12, JSON.stringify(r));
    const auto = await t.translateText('Good morning, my friend.', null, 'de');
    check('translateText detected', auto.detectedSourceLang === 'en' && auto.text.length > 0, JSON.stringify(auto));
    const list = await t.translateText(['One apple.', 'Two houses.', 'The weather is nice.'], 'en', 'de');
    check('translateText list', Array.isArray(list) && list.length === 3 && list.every((x) => x.text.length > 0),
          JSON.stringify(list));
    const gb = await t.translateText('Guten Morgen.', 'de', 'en-GB');
    check('translateText en-GB', gb.text.length > 0 && gb.detectedSourceLang === 'de', JSON.stringify(gb));
  });

  await run('tagHandling', async () => {
    const html = await t.translateText('<p>Hello <b>world</b>. <code>keep_this(x)</code></p>', 'en', 'de',
                                       { tagHandling: 'html', ignoreTags: ['code'] });
    check('html keeps tags', html.text.startsWith('<p>') && html.text.includes('<b>') && html.text.endsWith('</p>'),
          html.text);
    check('html ignoreTags', html.text.includes('<code>keep_this(x)</code>'), html.text);
    const xml = await t.translateText('Delete <x id="0"/> files from <y>the old folder</y>?', 'en', 'de',
                                      { tagHandling: 'xml', ignoreTags: ['x', 'y'] });
    check('xml placeholder', xml.text.includes('<x id="0"/>'), xml.text);
    check('xml ignoreTags', xml.text.includes('<y>the old folder</y>'), xml.text);
    check('xml no marker left', !xml.text.includes('data-mt'), xml.text);
  });

  await run('formality', async () => {
    const pref = await t.translateText('How are you?', 'en', 'de', { formality: 'prefer_more' });
    check('formality prefer_more', pref.text.length > 0, JSON.stringify(pref));
    let err = null;
    try {
      await t.translateText('How are you?', 'en', 'de', { formality: 'more' });
    } catch (e) {
      err = e;
    }
    check('formality more refused', err instanceof deepl.DeepLError && /formality/.test(err.message), String(err));
  });

  await run('languages', async () => {
    const src = await t.getSourceLanguages();
    const tgt = await t.getTargetLanguages();
    check('getSourceLanguages', src.some((l) => l.code === 'en' && l.name === 'English') &&
          src.some((l) => l.code === 'de'), JSON.stringify(src));
    check('getTargetLanguages', tgt.some((l) => l.code === 'de' && l.supportsFormality === false) &&
          tgt.some((l) => l.code === 'en-GB') && tgt.some((l) => l.code === 'en-US'), JSON.stringify(tgt));
  });

  await run('usage', async () => {
    const u = await t.getUsage();
    check('getUsage', u.character && u.character.count > 0 && u.character.limit > u.character.count &&
          !u.anyLimitReached(), JSON.stringify(u));
  });

  await run('documents', async () => {
    const txtIn = path.join(workDir, 'in.txt');
    const txtOut = path.join(workDir, 'out.txt');
    fs.writeFileSync(txtIn, 'Hello world.\nThe house is small.\n');
    const st = await t.translateDocument(txtIn, txtOut, 'en', 'de');
    const out = fs.readFileSync(txtOut, 'utf8');
    check('translateDocument txt', st.done() && out.split('\n').length === 3 && out !== 'Hello world.\nThe house is small.\n',
          JSON.stringify(out));
    const docxOut = path.join(workDir, 'out.docx');
    const st2 = await t.translateDocument(docxPath, docxOut, null, 'de');
    const bytes = fs.readFileSync(docxOut);
    check('translateDocument docx', st2.done() && bytes.slice(0, 2).toString() === 'PK' && bytes.length > 100,
          'size ' + bytes.length);
  });

  await run('glossaries', async () => {
    const pairs = await t.getGlossaryLanguagePairs();
    check('getGlossaryLanguagePairs', Array.isArray(pairs) && pairs.some((p) => p.sourceLang === 'en' && p.targetLang === 'de'),
          JSON.stringify(pairs));
    const g = await t.createGlossary('mt check', 'en', 'de',
                                     new deepl.GlossaryEntries({ entries: { button: 'Schaltfläche', file: 'Datei' } }));
    check('createGlossary', g.ready && g.entryCount === 2 && g.sourceLang === 'en' && g.targetLang === 'de' &&
          g.creationTime instanceof Date && !isNaN(g.creationTime), JSON.stringify(g));
    const list = await t.listGlossaries();
    check('listGlossaries', Array.isArray(list) && list.some((x) => x.glossaryId === g.glossaryId), JSON.stringify(list));
    const got = await t.getGlossary(g.glossaryId);
    check('getGlossary', got.name === 'mt check' && got.entryCount === 2, JSON.stringify(got));
    const entries = await t.getGlossaryEntries(g);
    check('getGlossaryEntries', entries.entries().button === 'Schaltfläche' && entries.entries().file === 'Datei',
          JSON.stringify(entries.entries()));
    const r = await t.translateText('Click the button to save the file.', 'en', 'de', { glossary: g });
    check('translateText with glossary', r.text.includes('Schaltfläche') && r.text.includes('Datei'), r.text);
    await t.deleteGlossary(g);
    let err = null;
    try {
      await t.getGlossary(g.glossaryId);
    } catch (e) {
      err = e;
    }
    check('deleteGlossary', err instanceof deepl.GlossaryNotFoundError, String(err));
  });

  await run('multilingual glossaries', async () => {
    const client = new deepl.DeepLClient(authKey, { serverUrl, maxRetries: 1, minTimeout: 10000 });
    const g = await client.createMultilingualGlossary('mt v3', [
      { sourceLangCode: 'en', targetLangCode: 'de', entries: new deepl.GlossaryEntries({ entries: { button: 'Schaltfläche' } }) },
    ]);
    check('createMultilingualGlossary', g.dictionaries.length === 1 && g.dictionaries[0].entryCount === 1 &&
          g.dictionaries[0].sourceLangCode === 'en' && g.name === 'mt v3', JSON.stringify(g));
    const list = await client.listMultilingualGlossaries();
    check('listMultilingualGlossaries', list.some((x) => x.glossaryId === g.glossaryId), JSON.stringify(list));
    const d = await client.getMultilingualGlossaryDictionaryEntries(g, 'en', 'de');
    check('getMultilingualGlossaryDictionaryEntries', d.entries.entries().button === 'Schaltfläche',
          JSON.stringify(d.entries.entries()));
    const r = await client.translateText('Press the button.', 'en', 'de', { glossary: g });
    check('translateText with multilingual glossary', r.text.includes('Schaltfläche'), r.text);
    await client.deleteMultilingualGlossary(g);
    let err = null;
    try {
      await client.getMultilingualGlossary(g.glossaryId);
    } catch (e) {
      err = e;
    }
    check('deleteMultilingualGlossary', err instanceof deepl.GlossaryNotFoundError, String(err));
  });

  await run('bad key', async () => {
    const bad = new deepl.Translator('wrong-key:fx', { serverUrl, maxRetries: 1 });
    let err = null;
    try {
      await bad.translateText('Hello', 'en', 'de');
    } catch (e) {
      err = e;
    }
    check('bad key AuthorizationError', err instanceof deepl.AuthorizationError, String(err));
  });

  console.log(failed ? failed + ' failed' : 'all passed');
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log('FAIL main: ' + e);
  process.exit(1);
});
