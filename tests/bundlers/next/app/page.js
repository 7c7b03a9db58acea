// A server component rendering the client component that sends.
import Sender from './sender.js';

export default function Page() {
  return (
    <main>
      <h1>httpipe + Next.js</h1>
      <Sender />
    </main>
  );
}
