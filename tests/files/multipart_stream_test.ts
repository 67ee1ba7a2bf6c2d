import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readMultipartStream, type StreamLimits } from "../../lib/files/multipart_stream.ts";
import { DEFAULT_ATTACHMENT_TYPES, type FileKind } from "../../lib/files/sniff.ts";
import { withSpool } from "../support/temp_spool.ts";
import { chunked } from "../support/chunked.ts";

const LIMITS: StreamLimits = {
  fileBytes: 1_000_000,
  textBytes: 16_384,
  kinds: new Set<FileKind>(DEFAULT_ATTACHMENT_TYPES),
  maxParts: 1000,
};

/** A PDF's bytes: its magic number, then `size` bytes of a seeded pattern. */
function pdf(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode("%PDF-1.7\n"));
  for (let i = 9; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

/** A multipart body as a browser sends it, with its Content-Type. */
async function encode(entries: [string, string | File][]): Promise<[Uint8Array, string]> {
  const form = new FormData();
  for (const [name, value] of entries) form.append(name, value);
  const request = new Request("http://localhost/", { method: "POST", body: form });
  return [new Uint8Array(await request.arrayBuffer()), request.headers.get("content-type")!];
}

async function listed(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name).sort();
}

Deno.test("a file part is written to the spool byte for byte, its sha256 and kind from its content", async () => {
  await withSpool(async (spool, dir) => {
    const content = pdf(200_000);
    const [body, type] = await encode([
      ["name", "Ann"],
      ["cv", new File([content], "../../etc/CV\u202e.pdf", { type: "image/png" })],
      ["message", "Hi ✓"],
    ]);
    for (const size of [13, 64, 65_536]) {
      const prefix = `s${size}`;
      const result = await readMultipartStream(chunked(body, size), type, LIMITS, {
        spool,
        prefix,
      });
      assert.equal(result.kind, "parsed");
      if (result.kind !== "parsed") return;
      assert.deepEqual(result.pairs, [["name", "Ann"], ["message", "Hi ✓"]]);
      assert.equal(result.files.length, 1);
      const [file] = result.files;
      assert.deepEqual({ ...file, stored: undefined }, {
        field: "cv",
        name: "CV.pdf",
        size: content.length,
        type: "application/pdf", // not the declared image/png
        kind: "pdf",
        sha256: createHash("sha256").update(content).digest("hex"),
        stored: undefined,
      });
      assert.deepEqual(await Deno.readFile(spool.path(file!.stored)), content);
      assert.equal((await Deno.stat(spool.path(file!.stored))).mode! & 0o777, 0o600);
    }
    assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
  });
});

Deno.test("files over the limit are cut off at the limit with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    const [body, type] = await encode([
      ["message", "m"],
      ["a", new File([pdf(600_000)], "a.pdf")],
      ["b", new File([pdf(600_000)], "b.pdf")],
    ]);
    let read = 0;
    const source = chunked(body, 4096).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          read += chunk.length;
          controller.enqueue(chunk);
        },
      }),
    );
    const result = await readMultipartStream(source, type, LIMITS, { spool, prefix: "x" });
    assert.deepEqual(result, { kind: "too_large", what: "files" });
    // Stopped at the limit (one chunk past it at most), not read to the end.
    assert.ok(read < LIMITS.fileBytes + 1024 + 4096, `read ${read} bytes`);
    assert.deepEqual(await listed(dir), []);
  });
});

Deno.test("a disguised executable is refused whatever its declared type and name", async () => {
  await withSpool(async (spool, dir) => {
    const programs: Uint8Array<ArrayBuffer>[] = [
      new Uint8Array([0x4d, 0x5a, 0x90, 0x00, ...new Uint8Array(600)]), // MZ
      new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, ...new Uint8Array(600)]), // ELF
      new Uint8Array([0xcf, 0xfa, 0xed, 0xfe, ...new Uint8Array(60)]), // Mach-O
      new TextEncoder().encode("#!/bin/sh\nrm -rf ~\n"),
      new Uint8Array([0x50, 0x4b, 0x03, 0x04, ...new Uint8Array(60)]), // a zip, not listed
    ];
    for (const program of programs) {
      const [body, type] = await encode([
        ["message", "m"],
        ["cv", new File([program], "cv.pdf", { type: "application/pdf" })],
      ]);
      const result = await readMultipartStream(chunked(body, 100), type, LIMITS, {
        spool,
        prefix: "x",
      });
      assert.equal(result.kind, "invalid");
      assert.equal(result.kind === "invalid" && result.code, "file_not_accepted");
      assert.equal(result.kind === "invalid" && result.field, "cv");
      assert.deepEqual(await listed(dir), []);
    }
    // Even when ATTACHMENT_TYPES lists every kind, an executable is refused.
    const everything: StreamLimits = {
      ...LIMITS,
      kinds: new Set<FileKind>(["pdf", "zip", "executable"]),
    };
    const [body, type] = await encode([["f", new File([programs[0]!], "x.pdf")]]);
    const result = await readMultipartStream(chunked(body, 100), type, everything, {
      spool,
      prefix: "x",
    });
    assert.equal(result.kind === "invalid" && result.code, "file_not_accepted");
  });
});

Deno.test("the text parts keep the 16 KiB budget while files may be larger", async () => {
  await withSpool(async (spool, dir) => {
    const [body, type] = await encode([
      ["message", "x".repeat(17_000)],
      ["f", new File([pdf(100)], "a.pdf")],
    ]);
    const result = await readMultipartStream(chunked(body, 1000), type, LIMITS, {
      spool,
      prefix: "x",
    });
    assert.deepEqual(result, { kind: "too_large", what: "text" });
    assert.deepEqual(await listed(dir), []);
  });
});

Deno.test("an empty file input is left out; a small text file is kept", async () => {
  await withSpool(async (spool) => {
    const [body, type] = await encode([
      ["message", "m"],
      ["none", new File([], "")],
      ["note", new File(["just words\n"], "note.txt")],
    ]);
    const result = await readMultipartStream(chunked(body, 5), type, LIMITS, {
      spool,
      prefix: "y",
    });
    assert.equal(result.kind, "parsed");
    if (result.kind !== "parsed") return;
    assert.deepEqual(result.pairs, [["message", "m"]]);
    assert.deepEqual(result.files.map((f) => [f.field, f.name, f.type, f.size, f.stored]), [
      ["note", "note.txt", "text/plain", 11, "y-0"],
    ]);
  });
});

Deno.test("a body cut short, without a boundary or with invalid UTF-8 is refused with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    const [body, type] = await encode([["f", new File([pdf(5000)], "a.pdf")]]);
    const cut = await readMultipartStream(chunked(body.slice(0, 3000), 100), type, LIMITS, {
      spool,
      prefix: "x",
    });
    assert.equal(cut.kind === "invalid" && cut.code, "invalid_multipart");
    const noBoundary = await readMultipartStream(
      chunked(body, 100),
      "multipart/form-data",
      LIMITS,
      {
        spool,
        prefix: "x",
      },
    );
    assert.equal(noBoundary.kind === "invalid" && noBoundary.code, "invalid_multipart");
    const boundary = type.split("boundary=")[1]!;
    const bad = new Uint8Array([
      ...new TextEncoder().encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="m"\r\n\r\n`,
      ),
      0xff,
      ...new TextEncoder().encode(`\r\n--${boundary}--\r\n`),
    ]);
    const encoding = await readMultipartStream(chunked(bad, 3), type, LIMITS, {
      spool,
      prefix: "x",
    });
    assert.equal(encoding.kind === "invalid" && encoding.code, "invalid_encoding");
    assert.deepEqual(await listed(dir), []);
  });
});

Deno.test("a body that takes too long ends as a timeout with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    const [body, type] = await encode([["f", new File([pdf(5000)], "a.pdf")]]);
    let expire = () => {};
    const expired = new Promise<void>((resolve) => (expire = resolve));
    let sent = false;
    const stalled = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) {
          expire();
          return new Promise(() => {}); // never more
        }
        sent = true;
        controller.enqueue(body.slice(0, 2000));
      },
    });
    const result = await readMultipartStream(stalled, type, LIMITS, {
      spool,
      prefix: "x",
      expired,
    });
    assert.deepEqual(result, { kind: "timeout" });
    assert.deepEqual(await listed(dir), []);
  });
});

Deno.test("a body whose read fails mid-file ends as read_failed with its error, every file written so far removed", async () => {
  await withSpool(async (spool, dir) => {
    const [body, type] = await encode([
      ["a", new File([pdf(5000)], "a.pdf")],
      ["b", new File([pdf(600_000)], "b.pdf")],
    ]);
    const gone = new Deno.errors.BadResource("Cannot read request body");
    let at = 0;
    let written: string[] = [];
    const cut = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (at >= 300_000) {
          written = await listed(dir);
          return controller.error(gone);
        }
        controller.enqueue(body.slice(at, at + 4096));
        at += 4096;
      },
    });
    const result = await readMultipartStream(cut, type, LIMITS, { spool, prefix: "x" });
    assert.deepEqual(result, { kind: "read_failed", error: gone });
    assert.equal(written.length, 2, "both files were being written");
    assert.deepEqual(await listed(dir), []);
  });
});
