// The list page's script: kept typing ends with the sign-in.
import { forgetKept } from "/offlinelock.js";
document.getElementById("logout").form.addEventListener("submit", () => forgetKept());
