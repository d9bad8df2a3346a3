// Validates the Prometheus Operator resources (ServiceMonitor) of a rendered
// manifest stream against the operator's CRD schemas, which the core
// Kubernetes validator does not know. Usage: node prometheus_operator.mjs FILE
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const kinds = { "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor };
let checked = 0;
let failed = 0;
for (const doc of parseAllDocuments(readFileSync(process.argv[2], "utf8"))) {
  const obj = doc.toJS();
  if (!obj) continue;
  const Model = kinds[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) continue;
  checked += 1;
  try {
    new Model(obj).validate();
    console.log(`prometheus-operator: ${obj.kind}/${obj.metadata.name} valid`);
  } catch (e) {
    failed += 1;
    console.error(`prometheus-operator: ${obj.kind}/${obj.metadata?.name}: ${e.message}`);
  }
}
if (checked === 0) {
  console.error("prometheus-operator: no ServiceMonitor in the manifests");
  process.exit(1);
}
process.exit(failed ? 1 : 0);
