// SPDX-License-Identifier: MIT
// What aisb kube prints, checked against the Kubernetes API's schemas (kubernetes-models,
// compiled from the OpenAPI of Kubernetes 1.33; tests/kube/package.json pins it): types,
// required fields, enums and formats of every object. It does not refuse unknown fields (the
// compiled schemas are open); the golden files and the restricted-standard checker of
// tests/unit/test-kube.c cover what aisb puts there.
//
// usage: node validate.js FILE...   (each: JSON documents after "---" lines)
'use strict';
const fs = require('fs');
const path = require('path');

let models;
try {
  const from = (m) => require(path.join(__dirname, 'node_modules', 'kubernetes-models', m));
  models = {
    'v1/Pod': from('v1').Pod,
    'v1/Service': from('v1').Service,
    'v1/ConfigMap': from('v1').ConfigMap,
    'v1/PersistentVolumeClaim': from('v1').PersistentVolumeClaim,
    'apps/v1/Deployment': from('apps/v1').Deployment,
    'networking.k8s.io/v1/NetworkPolicy': from('networking.k8s.io/v1').NetworkPolicy,
    'agents.x-k8s.io/v1beta1/Sandbox': sandboxModel(from('v1').PodSpec),
  };
} catch (e) {
  console.error(`kube-schema: cannot run: kubernetes-models is not installed in ${__dirname} (scripts/setup installs it)`);
  process.exit(process.env.CI === 'true' ? 1 : 77);
}

// kubernetes-sigs/agent-sandbox's Sandbox (agents.x-k8s.io/v1beta1), whose CRD no package
// here carries: its wrapper checked field by field after the project's Go types
// (api/v1beta1/sandbox_types.go: spec.podTemplate {metadata {labels, annotations}, spec
// PodSpec} required, volumeClaimTemplates, service, shutdownTime, shutdownPolicy Delete or
// Retain, operatingMode Running or Suspended), the pod spec by the API's own schema.
function sandboxModel(PodSpec) {
  const only = (o, keys, where) => {
    for (const k of Object.keys(o || {}))
      if (!keys.includes(k)) throw { errors: [{ instancePath: where, message: `unknown field ${k}` }] };
  };
  return class {
    constructor(doc) { this.doc = doc; }
    validate() {
      const d = this.doc;
      only(d, ['apiVersion', 'kind', 'metadata', 'spec'], '');
      only(d.spec, ['podTemplate', 'volumeClaimTemplates', 'service', 'shutdownTime', 'shutdownPolicy', 'operatingMode'],
           '/spec');
      if (!d.metadata || typeof d.metadata.name !== 'string')
        throw { errors: [{ instancePath: '/metadata/name', message: 'required' }] };
      const t = d.spec && d.spec.podTemplate;
      if (!t || !t.spec) throw { errors: [{ instancePath: '/spec/podTemplate/spec', message: 'required' }] };
      only(t, ['metadata', 'spec'], '/spec/podTemplate');
      only(t.metadata, ['labels', 'annotations'], '/spec/podTemplate/metadata');
      for (const [k, v] of Object.entries((t.metadata && t.metadata.labels) || {}))
        if (typeof v !== 'string') throw { errors: [{ instancePath: `/spec/podTemplate/metadata/labels/${k}`, message: 'must be string' }] };
      if (d.spec.shutdownPolicy !== undefined && !['Delete', 'Retain'].includes(d.spec.shutdownPolicy))
        throw { errors: [{ instancePath: '/spec/shutdownPolicy', message: 'Delete or Retain' }] };
      if (d.spec.operatingMode !== undefined && !['Running', 'Suspended'].includes(d.spec.operatingMode))
        throw { errors: [{ instancePath: '/spec/operatingMode', message: 'Running or Suspended' }] };
      new PodSpec(t.spec).validate();
    }
  };
}

let bad = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, 'utf8');
  if (!text.startsWith('---\n')) {
    console.log(`${file}: does not start with a --- line`);
    bad++;
    continue;
  }
  for (const [i, part] of text.split(/^---\n/m).slice(1).entries()) {
    const doc = JSON.parse(part);
    const key = `${doc.apiVersion}/${doc.kind}`;
    const where = `${path.basename(file)} #${i} ${key} ${doc.metadata && doc.metadata.name}`;
    const Model = models[key];
    checked++;
    if (!Model) {
      console.log(`${where}: a kind this check does not know`);
      bad++;
      continue;
    }
    try {
      new Model(doc).validate();
      console.log(`${where}: ok`);
    } catch (e) {
      bad++;
      console.log(`${where}: INVALID`);
      for (const err of e.errors || [e])
        console.log(`    ${err.instancePath || ''} ${err.message}`);
    }
  }
}
console.log(`kube-schema: ${checked} objects, ${bad} invalid`);
process.exit(bad || checked === 0 ? 1 : 0);
