import assert from "node:assert/strict";
import { sniffType } from "../../lib/files/sniff.ts";

const bytes = (...values: number[]) => new Uint8Array([...values, ...new Uint8Array(64)]);
const text = (value: string) => new TextEncoder().encode(value);

Deno.test("documents and images are known by their magic numbers", () => {
  assert.equal(sniffType(text("%PDF-1.7\n...")), "pdf");
  assert.equal(sniffType(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)), "png");
  assert.equal(sniffType(bytes(0xff, 0xd8, 0xff, 0xe0)), "jpeg");
  assert.equal(sniffType(text("GIF89a....")), "gif");
  assert.equal(sniffType(text("RIFF\0\0\0\0WEBPVP8 ")), "webp");
  assert.equal(sniffType(text("Dear team,\nplease find ✓\n")), "txt");
  const tar = new Uint8Array(512);
  tar.set(text("ustar"), 257);
  tar.set(text("notes.txt"), 0);
  assert.equal(sniffType(tar), "tar");
});

Deno.test("programs and containers are never taken for documents", () => {
  assert.equal(sniffType(bytes(0x4d, 0x5a)), "executable");
  assert.equal(sniffType(bytes(0x7f, 0x45, 0x4c, 0x46)), "executable");
  assert.equal(sniffType(bytes(0xcf, 0xfa, 0xed, 0xfe)), "executable");
  assert.equal(sniffType(bytes(0xca, 0xfe, 0xba, 0xbe)), "executable");
  assert.equal(sniffType(text("#!/bin/sh\necho hi\n")), "executable");
  assert.equal(sniffType(bytes(0x50, 0x4b, 0x03, 0x04)), "zip");
  // Old Office files (macros), cabinets and compressed streams: not recognised at all.
  assert.equal(sniffType(bytes(0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1)), undefined);
  assert.equal(sniffType(text("MSCF\0\0\0\0")), undefined);
  // Text that a browser would run, or that holds control characters, is no plain text.
  assert.equal(sniffType(text("<html><script>alert(1)</script>")), undefined);
  assert.equal(sniffType(text("  \ufeff#!/usr/bin/env python\n")), undefined);
  assert.equal(sniffType(text("a\0b")), undefined);
  assert.equal(sniffType(new Uint8Array([0xc3, 0x28])), undefined);
  assert.equal(sniffType(new Uint8Array(0)), undefined);
});

Deno.test("a UTF-8 character cut at the end of the head is still text", () => {
  const head = text("é".repeat(300)).subarray(0, 511);
  assert.equal(sniffType(head), "txt");
});
