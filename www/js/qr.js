// QR code of the receive link, generated in the page (vendored uqr, no network).
import { renderSVG } from '/assets/vendor/uqr.js';

/** Renders `text` as an SVG QR code into `figure` (error correction M, 2-module quiet zone). */
export function renderQr(figure, text) {
  figure.innerHTML = renderSVG(text, { ecc: 'M', border: 2 });
  const svg = figure.querySelector('svg');
  if (svg) svg.setAttribute('aria-hidden', 'true');
}
