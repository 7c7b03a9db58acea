// The hospital: answers every pull from the research organisation with a fresh export,
// anonymised and encrypted to the organisation's age key, until stopped (Ctrl-C).
//   node examples/records/hospital.mjs http://127.0.0.1:8080 /hospital/export age1...
import { createHash } from 'node:crypto';
import { serve, pipeline, map, csv, toPipe } from '../../pkg/index.js'; // in your project: from 'httpipe'

const [relay, path, recipient] = process.argv.slice(2);
const salt = process.env.PSEUDONYM_SALT || 'rotate me';

function* patients() { // stands in for a query on the hospital's database
  for (let i = 0; i < 5000; i++) yield { name: `Patient ${i}`, birthDate: `19${50 + (i % 50)}-04-0${1 + (i % 9)}`, postcode: `${10 + (i % 80)}115`, diagnosis: i % 7 ? 'J45.0' : 'E11.9, "type 2"' };
}
const anonymise = ({ name, birthDate, postcode, ...rest }) => ({
  pseudonym: createHash('sha256').update(salt + name).digest('hex').slice(0, 16), birthYear: birthDate.slice(0, 4), region: postcode.slice(0, 2), ...rest,
});

const server = serve((peer) => pipeline(patients, map(anonymise), csv.encode(), toPipe({ ...peer, recipients: [recipient] })),
  { relay, path, mode: 'await-reader', onError: (e, round) => console.error(`pull ${round} failed: ${e.message}`) });
process.on('SIGINT', () => server.abort('stopped'));
process.on('SIGTERM', () => server.abort('stopped'));
const summary = await server.done;
console.log(JSON.stringify({ pulls: summary.completed, failed: summary.failed }));
